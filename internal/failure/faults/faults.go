// Package faults runs the market, and the lock recipes under it, against
// private redis-server processes while one fault at a time is injected, and
// checks what happened with checkers independent of the code under test:
// the market's invariant audit on the final state, and the recorded
// history of every operation (package history).
//
// The faults:
//
//   - Pause, PauseProcess: a client pauses longer than the lock TTL
//     between taking the lock and committing, while a second client buys
//     the same listing (by a hook in the strategy, or by SIGSTOP/SIGCONT
//     of a client process);
//   - Stall, DebugSleep: Redis stops answering for longer than the lock
//     TTL and the clients' read timeout while operations are in flight
//     (SIGSTOP/SIGCONT of redis-server, or DEBUG SLEEP);
//   - ClientKill, Restart: connections killed mid-transaction (CLIENT
//     KILL), or redis-server killed and restarted (with an fsync-always
//     append-only file, so what was acknowledged can survive);
//   - Failover: a primary with a replica, the primary killed and the
//     replica promoted while locks are held;
//   - FailoverMarket: the same while buyers buy, the replica lagging;
//     with WAIT after each purchase or without, and with idempotency keys
//     (operation IDs) or without;
//   - RedlockRestart, RedlockClockJump: Redlock over five servers, one
//     restarted without persistence, or one whose keys expire early.
package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/market"
)

// Fault names one injected fault.
type Fault string

// The faults, in the order they are run.
const (
	Pause          Fault = "pause"
	PauseProcess   Fault = "pause-process"
	Stall          Fault = "stall"
	DebugSleep     Fault = "debug-sleep"
	ClientKill     Fault = "client-kill"
	Restart        Fault = "restart"
	FailoverWait   Fault = "failover-wait"
	FailoverAsync  Fault = "failover-async"
	FailoverNoLink Fault = "failover-nolink"
	// FailoverMarket runs purchases across a failover (see
	// failovermarket.go).
	FailoverMarket   Fault = "failover-market"
	RedlockRestart   Fault = "redlock-restart"
	RedlockClockJump Fault = "redlock-clock"
)

// Faults lists every fault in run order.
var Faults = []Fault{
	Pause, PauseProcess, Stall, DebugSleep, ClientKill, Restart,
	FailoverWait, FailoverAsync, FailoverNoLink, FailoverMarket, RedlockRestart, RedlockClockJump,
}

// Describe says in a few words what the fault does.
func (f Fault) Describe() string {
	switch f {
	case Pause:
		return "holder paused past the lock TTL before committing (hook)"
	case PauseProcess:
		return "holder process SIGSTOPped past the lock TTL before committing"
	case Stall:
		return "redis-server SIGSTOPped while operations are in flight"
	case DebugSleep:
		return "redis-server blocked by DEBUG SLEEP while operations are in flight"
	case ClientKill:
		return "client connections killed (CLIENT KILL) while operations are in flight"
	case Restart:
		return "redis-server SIGKILLed and restarted (appendfsync always)"
	case FailoverWait:
		return "primary killed, replica promoted; each acquisition followed by WAIT"
	case FailoverAsync:
		return "primary killed right after acquisitions, replica promoted; no WAIT"
	case FailoverNoLink:
		return "replication link down, primary killed, replica promoted"
	case FailoverMarket:
		return "purchases; replica lagging, primary killed, replica promoted (+wait: WAIT after each)"
	case RedlockRestart:
		return "Redlock on 5 servers; one granting server restarted without persistence"
	case RedlockClockJump:
		return "Redlock on 5 servers; one granting server's key expires early (clock jump)"
	}
	return string(f)
}

// ParseFaults parses a comma-separated list of fault names, or "all".
func ParseFaults(s string) ([]Fault, error) {
	if s == "" || s == "all" {
		return slices.Clone(Faults), nil
	}
	var out []Fault
	for _, name := range strings.Split(s, ",") {
		f := Fault(strings.TrimSpace(name))
		if !slices.Contains(Faults, f) {
			return nil, fmt.Errorf("%w: unknown fault %q (want all or some of %s)", ErrConfig, f, faultNames())
		}
		out = append(out, f)
	}
	return out, nil
}

func faultNames() string {
	names := make([]string, len(Faults))
	for i, f := range Faults {
		names[i] = string(f)
	}
	return strings.Join(names, ",")
}

// Variant is what runs under a fault: a market strategy, with "+fencing"
// when its lock is fenced, or a lock recipe for the failover and Redlock
// faults.
type Variant string

// Lock recipes, for the faults that exercise locks directly.
const (
	// Mutex is locking.Mutex (SET NX PX) on one primary.
	Mutex Variant = "mutex"
	// Redlock is locking.RedlockMutex over five servers.
	Redlock Variant = "redlock"
	// RedlockFenced is Redlock whose holders write through a fenced
	// resource (locking.FencedWrite).
	RedlockFenced Variant = "redlock+fencing"
)

// FencedSuffix marks a fenced lock strategy.
const FencedSuffix = "+fencing"

// WatchdogSuffix marks a lock strategy whose lease a watchdog renews
// while the lock is held (locking.KeepAlive), without fencing.
const WatchdogSuffix = "+watchdog"

// strategy splits a market variant into its strategy, fencing and
// watchdog.
func (v Variant) strategy() (s market.Strategy, fenced, watchdog bool, err error) {
	name := string(v)
	name, fenced = strings.CutSuffix(name, FencedSuffix)
	if !fenced {
		name, watchdog = strings.CutSuffix(name, WatchdogSuffix)
	}
	s, err = market.ParseStrategy(name)
	if err != nil {
		return "", false, false, err
	}
	if (fenced || watchdog) && s != market.Fine && s != market.Coarse {
		return "", false, false, fmt.Errorf("%w: only fine and coarse take %s or %s", ErrConfig, FencedSuffix, WatchdogSuffix)
	}
	return s, fenced, watchdog, nil
}

// marketVariants are the market strategies the market faults run.
func marketVariants() []Variant {
	out := []Variant{"watch", "lua", "coarse"}
	if FencingAvailable {
		out = append(out, "coarse"+FencedSuffix)
	}
	out = append(out, "fine")
	if FencingAvailable {
		out = append(out, "fine"+FencedSuffix)
	}
	return out
}

// Variants lists what runs under fault f.
func (f Fault) Variants() []Variant {
	switch f {
	case Pause, PauseProcess:
		// A renewed lease survives a paused goroutine (its watchdog keeps
		// running) but not a paused process.
		return append(marketVariants(), "fine"+WatchdogSuffix)
	case FailoverWait, FailoverAsync, FailoverNoLink:
		return []Variant{Mutex}
	case FailoverMarket:
		return failoverMarketVariants()
	case RedlockRestart, RedlockClockJump:
		return []Variant{Redlock, RedlockFenced}
	}
	return marketVariants()
}

// ErrConfig is returned for an invalid Config, fault or variant.
var ErrConfig = errors.New("faults: invalid config")

// Config tunes the runs. Zero values take the defaults.
type Config struct {
	// Trials is how many times each (fault, variant) cell is repeated,
	// each on a fresh market (default 3).
	Trials int
	// Duration is how long the workload of the stall, kill and restart
	// faults runs per trial (default 1 s); the fault starts after a
	// quarter of it. The failover-market faults let the replica start
	// lagging after half of it.
	Duration time.Duration
	// LockTTL is the lease of the market's locks (default 200 ms).
	LockTTL time.Duration
	// Pause is how long a paused holder sleeps, how long Redis is
	// stalled, and how long the replica lags before the failover-market
	// failover (default 2×LockTTL + 200 ms).
	Pause time.Duration
	// ReadTimeout is the clients' read timeout (default 300 ms): a reply
	// that takes longer is given up, and its operation's outcome becomes
	// unknown.
	ReadTimeout time.Duration
	// Seed seeds the workload's random choices.
	Seed uint64
	// ClientCommand builds the command that runs a pausable client
	// process (see ClientMain) with the given arguments; PauseProcess
	// needs it.
	ClientCommand func(ctx context.Context, args ...string) *exec.Cmd
	// Log, if set, receives a line per trial.
	Log io.Writer
}

// DefaultPause is the pause of a Config that sets none: 2×ttl + 200 ms,
// long enough for the lease to run out and a second client to act.
func DefaultPause(ttl time.Duration) time.Duration { return 2*ttl + 200*time.Millisecond }

func (c Config) withDefaults() Config {
	if c.Trials <= 0 {
		c.Trials = 3
	}
	if c.Duration <= 0 {
		c.Duration = time.Second
	}
	if c.LockTTL <= 0 {
		c.LockTTL = 200 * time.Millisecond
	}
	if c.Pause <= 0 {
		c.Pause = DefaultPause(c.LockTTL)
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 300 * time.Millisecond
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// Result is what one (fault, variant) cell found over its trials.
type Result struct {
	Fault   Fault   `json:"fault"`
	Variant Variant `json:"strategy"`
	Trials  int     `json:"trials"`
	// Attempted, Ok, Failed and Unknown count the recorded operations
	// (purchases and listings; acquisitions for the lock faults) by
	// outcome.
	history.Counts
	// Retried counts operations whose reply was lost and that their
	// client ran again with the same operation ID (market.OpID) to learn
	// the outcome; Resolved, those of them a retry got an answer for (ok,
	// a replay included, or a refusal). Unknown counts what stayed
	// unknown. The workload and failover-market faults retry; the others
	// do not.
	Retried  int `json:"retried"`
	Resolved int `json:"resolved"`
	// Audit is the market's invariant audit of the final state, summed
	// over the trials: money conserved, no negative funds, every item in
	// one place. (Its ledger check is replaced by History; see addTrial.)
	Audit market.Violations `json:"audit"`
	// History is what the history checkers found, summed.
	History history.Anomalies `json:"history"`
	// Undecided counts items the linearizability checker could not decide.
	Undecided int `json:"undecided,omitempty"`
	// LockLost counts holds whose lease ran out (or vanished) while their
	// holder still acted on them.
	LockLost int `json:"lock_lost"`
	// DoubleHolders counts locks held by two clients at once, each
	// believing its lease valid.
	DoubleHolders int `json:"double_holders"`
	// StaleWrites counts writes by an older holder applied after a newer
	// holder's (lock faults), which fencing exists to stop.
	StaleWrites int `json:"stale_writes"`
	// Lost counts acknowledged purchases without a receipt in the final
	// state, and Duplicated receipts beyond the purchases that asked for
	// them (purchases applied twice); RefusedApplied counts purchases
	// answered with a refusal although an earlier attempt of theirs had
	// applied (a retry without an operation ID finds its own sale done).
	// The failover-market faults count them.
	Lost           int `json:"lost"`
	Duplicated     int `json:"duplicated"`
	RefusedApplied int `json:"refused_applied"`
	// Details holds the first violations described.
	Details []string `json:"details,omitempty"`
	// Error, when not empty, says why the cell could not run all its
	// trials (a set-up that failed, a server that would not start): the
	// counts are those of the trials that ended before it.
	Error string `json:"error,omitempty"`
}

// Violations is the number of broken data guarantees: audit and history
// violations, stale writes, and acknowledged purchases lost or applied
// twice. Double holders are counted apart: a lock
// held twice breaks mutual exclusion, which fencing does not restore, but
// it breaks data only through a stale write.
func (r Result) Violations() int {
	return r.Audit.Total() + r.History.Total() + r.StaleWrites + r.Lost + r.Duplicated
}

func (r *Result) note(format string, args ...any) {
	if len(r.Details) < 10 {
		r.Details = append(r.Details, fmt.Sprintf(format, args...))
	}
}

// addTrial folds one market trial's checks into r and returns the audit
// violations it counted. Only the audit's checks of the final state
// (invariants 1-3) are counted: its ledger check (each sale paid once)
// knows only acknowledged operations, so an operation of unknown outcome,
// or one made by another process, makes it ambiguous; the history
// checker's sold-twice and funds checks take its place.
func (r *Result) addTrial(hist history.Report, audit market.Report) market.Violations {
	r.Trials++
	r.Counts.Attempted += hist.Attempted
	r.Counts.Ok += hist.Ok
	r.Counts.Failed += hist.Failed
	r.Counts.Unknown += hist.Unknown
	v := audit.Violations
	v.NotPaidOnce = 0
	r.Audit.Add(v)
	r.History.Add(hist.Anomalies)
	r.Undecided += hist.Undecided
	for _, d := range hist.Details {
		r.note("history: %s", d)
	}
	if v.Total() > 0 {
		for _, d := range audit.Details {
			r.note("audit: %s", d)
		}
	}
	return v
}

// Run runs fault f against variant v for cfg.Trials trials, starting
// and stopping the redis-server processes it needs. It returns
// redisserver.ErrNoBinary when there is no redis-server.
func Run(ctx context.Context, f Fault, v Variant, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	if !slices.Contains(f.Variants(), v) {
		return Result{}, fmt.Errorf("%w: %s does not run under %s", ErrConfig, v, f)
	}
	switch f {
	case Pause, PauseProcess:
		return runPause(ctx, f, v, cfg, nil)
	case Stall, DebugSleep, ClientKill, Restart:
		return runWorkload(ctx, f, v, cfg)
	case FailoverWait, FailoverAsync, FailoverNoLink:
		return runFailover(ctx, f, cfg)
	case FailoverMarket:
		return runFailoverMarket(ctx, v, cfg)
	case RedlockRestart, RedlockClockJump:
		return runRedlock(ctx, f, v, cfg)
	}
	return Result{}, fmt.Errorf("%w: unknown fault %q", ErrConfig, f)
}
