package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/faults"
	"github.com/lockmarket/lockmarket/internal/latency"
	"github.com/lockmarket/lockmarket/internal/redisconn"
	"github.com/lockmarket/lockmarket/internal/redisserver"
	"github.com/lockmarket/lockmarket/internal/report"
	"github.com/lockmarket/lockmarket/internal/schema"
)

func init() {
	subcommands["faults"] = subcommand{run: runFaults,
		summary: "the market and its locks under injected faults: pauses, stalls, kills, failover"}
	subcommands["faults-client"] = subcommand{run: runFaultsClient, hidden: true}
}

// errUnexpected is returned when a strategy that should keep every
// guarantee under a fault did not.
var errUnexpected = errors.New("a correct strategy showed violations")

const faultsUsage = `usage: simulate faults [flags]

Runs the market, and the lock recipes under it, against private
redis-server processes (started and stopped here; a redis-server binary
must be on PATH) while one fault at a time is injected, and reports per
fault and strategy the operations attempted, acknowledged (ok), failed
and of unknown outcome, and what the checkers found: the invariant audit
of the final state and the recorded history (no listing sold twice, no
acknowledged sale lost, every debit matched by a credit, per-listing
linearizability). See the README, "Faults and reliability".

Faults:
%s
Flags:
`

const faultsExample = `
Examples:
  simulate faults                                  # every fault, 3 trials per cell
  simulate faults -fault pause,pause-process -trials 10
  simulate faults -fault stall -strategies watch,fine,fine+fencing -v
  simulate faults -format markdown > results/faults.md
  simulate faults -fault stall,restart -format csv > faults.csv
`

// faultsOptions are the parsed flags of "simulate faults".
type faultsOptions struct {
	faults     []faults.Fault
	strategies []faults.Variant // empty: every variant of each fault
	cfg        faults.Config
	format     string
	wide       bool
	verbose    bool
	trace      *faultTrace // -timeline: one traced trial instead of the table
}

func parseFaultsFlags(args []string, stderr io.Writer) (faultsOptions, error) {
	fs := flag.NewFlagSet("simulate faults", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o faultsOptions
	var faultList, strategies string
	fs.StringVar(&faultList, "fault", "all", "comma-separated faults, or all")
	fs.StringVar(&strategies, "strategies", "", "comma-separated strategies to run (watch, lua, coarse, coarse+fencing, fine, fine+fencing; mutex; redlock, redlock+fencing); empty: all that apply")
	fs.IntVar(&o.cfg.Trials, "trials", 3, "trials per fault and strategy, each on a fresh market")
	fs.DurationVar(&o.cfg.Duration, "duration", time.Second, "workload length per trial of the stall, debug-sleep, client-kill and restart faults")
	fs.DurationVar(&o.cfg.LockTTL, "ttl", 200*time.Millisecond, "lease of the market's coarse and fine locks")
	fs.DurationVar(&o.cfg.Pause, "pause", 0, "how long a holder is paused and Redis stalled (0: 2×ttl + 200ms)")
	fs.DurationVar(&o.cfg.ReadTimeout, "read-timeout", 300*time.Millisecond, "the clients' read timeout; a reply later than this makes the outcome unknown")
	fs.Uint64Var(&o.cfg.Seed, "seed", 1, "seed of the workload's random choices")
	fs.StringVar(&o.format, "format", "table", "output: "+strings.Join(report.Formats, ", "))
	fs.BoolVar(&o.wide, "wide", false, "table: every column (wider than 100 columns)")
	fs.BoolVar(&o.verbose, "v", false, "print a line per trial and the first violations of each cell to stderr; with -timeline, every command")
	var trace string
	fs.StringVar(&trace, "timeline", "", "print one trial of `FAULT/STRATEGY` (a pause fault) step by step instead of the table")
	fs.Usage = func() {
		var b strings.Builder
		for _, f := range faults.Faults {
			fmt.Fprintf(&b, "  %-17s %s\n", f, f.Describe())
		}
		fmt.Fprintf(fs.Output(), faultsUsage, b.String())
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), faultsExample)
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return o, err
	}
	bad := func(format string, a ...any) (faultsOptions, error) {
		return o, usagef(stderr, fs.Name(), format, a...)
	}
	var err error
	if o.faults, err = faults.ParseFaults(faultList); err != nil {
		return bad("-fault: %v", err)
	}
	known := map[faults.Variant]bool{}
	for _, f := range faults.Faults {
		for _, v := range f.Variants() {
			known[v] = true
		}
	}
	for name := range strings.SplitSeq(strategies, ",") {
		v := faults.Variant(strings.TrimSpace(name))
		if v == "" {
			continue
		}
		if !known[v] {
			return bad("-strategies: unknown strategy %q", v)
		}
		if !slices.Contains(o.strategies, v) {
			o.strategies = append(o.strategies, v)
		}
	}
	switch {
	case o.cfg.Trials < 1 || o.cfg.Trials > 1000:
		return bad("-trials %d must be between 1 and 1000", o.cfg.Trials)
	case o.cfg.Duration < 100*time.Millisecond || o.cfg.Duration > time.Hour:
		return bad("-duration %v must be between 100ms and 1h", o.cfg.Duration)
	case o.cfg.LockTTL < time.Millisecond || o.cfg.LockTTL > time.Minute:
		return bad("-ttl %v must be between 1ms and 1m", o.cfg.LockTTL)
	case o.cfg.Pause < 0 || o.cfg.Pause > time.Minute:
		return bad("-pause %v must be between 0 and 1m", o.cfg.Pause)
	case o.cfg.Pause > 0 && o.cfg.Pause <= o.cfg.LockTTL:
		return bad("-pause %v must exceed -ttl %v, or the holder is never paused past its lease", o.cfg.Pause, o.cfg.LockTTL)
	case o.cfg.ReadTimeout < time.Millisecond || o.cfg.ReadTimeout > time.Minute:
		return bad("-read-timeout %v must be between 1ms and 1m", o.cfg.ReadTimeout)
	}
	if !isFormat(o.format) {
		return bad("-format %q: want one of %s", o.format, strings.Join(report.Formats, ", "))
	}
	if trace != "" {
		t, err := parseFaultTrace(trace)
		if err != nil {
			return bad("-timeline: %v", err)
		}
		o.trace = &t
	}
	return o, nil
}

// faultsDoc is the JSON output.
type faultsDoc struct {
	// Env is where the faults ran: private redis-server processes of the
	// binary on PATH, on this machine.
	schema.Env
	Trials int `json:"trials"`
	// LockTTLMs, PauseMs and ReadTimeoutMs are the -ttl, -pause (with its
	// default applied) and -read-timeout flags; DurationS is -duration.
	LockTTLMs     float64         `json:"lock_ttl_ms"`
	PauseMs       float64         `json:"pause_ms"`
	ReadTimeoutMs float64         `json:"read_timeout_ms"`
	DurationS     float64         `json:"duration_s"`
	Seed          uint64          `json:"seed"`
	Rows          []faults.Result `json:"rows"`
}

// runFaults is "simulate faults".
func runFaults(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFaultsFlags(args, stderr)
	if err != nil {
		return err
	}
	bin, err := redisserver.Binary()
	if err != nil {
		return fmt.Errorf("faults need a redis-server binary to start, stall, kill and restart (install redis-server): %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable for the client process: %w", err)
	}
	o.cfg.ClientCommand = func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, exe, append([]string{"faults-client"}, args...)...)
	}
	if o.verbose {
		o.cfg.Log = stderr
	}
	if o.trace != nil {
		return printFaultTimeline(ctx, *o.trace, o.cfg, o.verbose, stdout)
	}
	pause := o.cfg.Pause
	if pause == 0 {
		pause = faults.DefaultPause(o.cfg.LockTTL)
	}
	doc := faultsDoc{
		Env:       schema.NewEnv(redisconn.ModeRedisServer, redisVersion(bin)),
		Trials:    o.cfg.Trials,
		LockTTLMs: latency.Milliseconds(o.cfg.LockTTL), PauseMs: latency.Milliseconds(pause), ReadTimeoutMs: latency.Milliseconds(o.cfg.ReadTimeout),
		DurationS: latency.Seconds(o.cfg.Duration),
		Seed:      o.cfg.Seed,
	}
	start := time.Now()
	cells := 0
	for _, f := range o.faults {
		for _, v := range f.Variants() {
			if len(o.strategies) == 0 || slices.Contains(o.strategies, v) {
				cells++
			}
		}
	}
	for _, f := range o.faults {
		for _, v := range f.Variants() {
			if len(o.strategies) > 0 && !slices.Contains(o.strategies, v) {
				continue
			}
			line := fmt.Sprintf("faults: [%d/%d] %s / %s, %v", len(doc.Rows)+1, cells, f, v, roundDuration(time.Since(start)))
			if left := eta(time.Since(start), len(doc.Rows), cells); left != "" {
				line += ", " + left
			}
			fmt.Fprintln(stderr, line)
			res, err := faults.Run(ctx, f, v, o.cfg)
			if err != nil {
				return fmt.Errorf("%s / %s: %w", f, v, err)
			}
			if o.verbose {
				for _, d := range res.Details {
					fmt.Fprintf(stderr, "  %s\n", d)
				}
			}
			doc.Rows = append(doc.Rows, res)
		}
	}
	fmt.Fprintf(stderr, "faults: %d cells in %v\n", len(doc.Rows), time.Since(start).Round(100*time.Millisecond))
	if err := renderFaults(stdout, o.format, o.wide, doc); err != nil {
		return err
	}
	var bad []string
	for _, r := range doc.Rows {
		if expectCorrect(r.Fault, r.Variant) && r.Violations() > 0 {
			bad = append(bad, fmt.Sprintf("%s/%s", r.Fault, r.Variant))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", errUnexpected, strings.Join(bad, ", "))
	}
	return nil
}

// expectCorrect says whether variant v is expected to keep every data
// guarantee under fault f: the strategies that do not depend on a lease
// (watch, lua) and the fenced lease locks, under the pause, stall, kill
// and restart faults; every strategy across a failover with WAIT after
// each purchase (+wait); redlock+fencing.
func expectCorrect(f faults.Fault, v faults.Variant) bool {
	switch f {
	case faults.Pause, faults.PauseProcess, faults.Stall, faults.DebugSleep, faults.ClientKill, faults.Restart:
		return v == "watch" || v == "lua" || strings.HasSuffix(string(v), faults.FencedSuffix)
	case faults.RedlockRestart, faults.RedlockClockJump:
		return v == faults.RedlockFenced
	case faults.FailoverMarket:
		// With WAIT, a purchase is acknowledged only once the replica
		// has it.
		return strings.Contains(string(v), faults.WaitSuffix)
	}
	return false
}

// redisVersion is the version of the redis-server binary bin, from its
// --version line ("Redis server v=7.0.15 sha=..."), or "unknown".
func redisVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	for f := range strings.FieldsSeq(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return "unknown"
}

// faultsColumns are the columns of the wide table and the markdown view.
var faultsColumns = []string{"fault", "strategy", "trials", "attempted", "ok", "failed", "unknown",
	"retried", "resolved", "audit", "history", "lock lost", "double holders", "stale writes",
	"lost", "duplicated", "violations"}

func faultsCells(r faults.Result) []string {
	n := strconv.Itoa
	return []string{string(r.Fault), string(r.Variant), n(r.Trials), n(r.Attempted), n(r.Ok), n(r.Failed), n(r.Unknown),
		n(r.Retried), n(r.Resolved), n(r.Audit.Total()), n(r.History.Total()), n(r.LockLost), n(r.DoubleHolders),
		n(r.StaleWrites), n(r.Lost), n(r.Duplicated), n(r.Violations())}
}

// faultsCSVColumns are the columns of the CSV: every count of a row, named
// as its JSON key.
var faultsCSVColumns = []string{"fault", "strategy", "trials", "attempted", "ok", "failed", "unknown",
	"retried", "resolved", "money_not_conserved", "negative_funds", "item_misplaced", "not_paid_once",
	"not_linearizable", "sold_twice", "lost_sales", "funds_mismatch", "undecided",
	"lock_lost", "double_holders", "stale_writes", "lost", "duplicated", "refused_applied", "violations"}

func faultsCSVCells(r faults.Result) []string {
	n := strconv.Itoa
	a, h := r.Audit, r.History
	return []string{string(r.Fault), string(r.Variant), n(r.Trials), n(r.Attempted), n(r.Ok), n(r.Failed), n(r.Unknown),
		n(r.Retried), n(r.Resolved), n(a.MoneyNotConserved), n(a.NegativeFunds), n(a.ItemMisplaced), n(a.NotPaidOnce),
		n(h.NotLinearizable), n(h.SoldTwice), n(h.LostSales), n(h.FundsMismatch), n(r.Undecided),
		n(r.LockLost), n(r.DoubleHolders), n(r.StaleWrites), n(r.Lost), n(r.Duplicated), n(r.RefusedApplied), n(r.Violations())}
}

// The default table fits schema.Width columns: trials (in the caption),
// the acknowledged and failed counts, and the audit and history split of
// the violations are left to -wide.
var faultsNarrowColumns = []string{"fault", "strategy", "attempted", "unknown", "lock\nlost", "double\nholders",
	"stale\nwrites", "violations"}

func faultsNarrowCells(r faults.Result) []string {
	n := strconv.Itoa
	return []string{string(r.Fault), string(r.Variant), n(r.Attempted), n(r.Unknown), n(r.LockLost), n(r.DoubleHolders),
		n(r.StaleWrites), n(r.Violations())}
}

// numericAfter2 marks every column of n as numeric except the first two.
func numericAfter2(n int) []bool {
	num := make([]bool, n)
	for i := 2; i < n; i++ {
		num[i] = true
	}
	return num
}

func faultsCaption(doc faultsDoc) string {
	return fmt.Sprintf("%d trials per cell; lock TTL %gms; workload %gs per trial; %d CPUs; redis-server %s; %s. "+
		"audit: money not conserved, negative funds, items misplaced (final state); history: items not "+
		"linearizable, sold twice, acknowledged sales lost, users whose funds do not match the purchases that "+
		"happened; retried: operations whose reply was lost, sent again with their operation ID until "+
		"answered (resolved); lost, duplicated: acknowledged purchases without a receipt after a failover, "+
		"receipts beyond the purchases asked for; violations = audit + history + stale writes + lost + duplicated.",
		doc.Trials, doc.LockTTLMs, doc.DurationS, doc.Machine.CPUs, doc.Redis.Version, doc.Machine.GoVersion)
}

// faultsView is the table of doc: every column when wide (and for
// markdown), else the columns that fit schema.Width.
func faultsView(doc faultsDoc, wide bool) view {
	cols, cells := faultsColumns, faultsCells
	if !wide {
		cols, cells = faultsNarrowColumns, faultsNarrowCells
	}
	v := view{columns: cols, numeric: numericAfter2(len(cols)), caption: schema.Wrap(faultsCaption(doc), schema.Width)}
	if !wide {
		v.caption = schema.Wrap(faultsCaption(doc)+" -wide adds ok, failed, retried, resolved, lost, duplicated, and audit and history apart.", schema.Width)
	}
	for _, r := range doc.Rows {
		v.rows = append(v.rows, cells(r))
	}
	return v
}

// renderFaults writes doc in format (one of report.Formats).
func renderFaults(w io.Writer, format string, wide bool, doc faultsDoc) error {
	switch format {
	case "json":
		return writeJSON(w, doc)
	case "csv":
		v := view{columns: faultsCSVColumns}
		for _, r := range doc.Rows {
			v.rows = append(v.rows, faultsCSVCells(r))
		}
		return v.csv(w)
	case "markdown":
		return faultsView(doc, true).markdown(w)
	}
	return faultsView(doc, wide).table(w)
}

// runFaultsClient is the hidden "simulate faults-client": the pausable
// client process of the pause-process fault (faults.ClientMain).
func runFaultsClient(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if code := faults.ClientMain(ctx, args, os.Stdin, stdout, stderr); code != 0 {
		return fmt.Errorf("%w: faults-client exited with %d", errUsage, code)
	}
	return nil
}
