package explore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/lockmarket/lockmarket/internal/explore/view"
	"github.com/redis/go-redis/v9"
)

// A Target is a lock of your own, in Go: what each client does, and
// optionally how each schedule's keys start and how they must end.
type Target struct {
	// Name names it in the report ("code" when empty).
	Name string
	// Clients is how many clients run Client at once (2 when 0).
	Clients int
	// Setup, if set, prepares each schedule's keys.
	Setup func(ctx context.Context, rdb *redis.Client, ns Namespace) error
	// Client is what one client does: it takes the lock, says it holds
	// it (Client.Holding), works, says it lets go (Client.Released) and
	// releases it. It must use the Redis client and the context it is
	// given, and the Client's clock to wait.
	Client func(ctx context.Context, c *Client) error
	// Check, if set, checks the keys at the end of each schedule; an
	// error breaks Resource.
	Check func(ctx context.Context, rdb *redis.Client, ns Namespace) error
}

// A Namespace is the prefix of every key one search may use. Each
// schedule starts with none of its keys, and the virtual clock runs down
// the leases of those keys only.
type Namespace string

// Key returns name prefixed with the namespace.
func (ns Namespace) Key(name string) string { return string(ns) + name }

// A Client is one client of a Target while a schedule runs.
type Client struct{ c *sched.Client }

// Redis is the client's own go-redis client: every command sent with the
// context the Target's Client function was given waits for its turn.
func (c *Client) Redis() *redis.Client { return c.c.Redis() }

// Name is the client's name: "A", "B", ...
func (c *Client) Name() string { return c.c.Name() }

// Key returns name prefixed with the search's namespace; every key the
// lock and the work touch must be made by it (or Namespace.Key).
func (c *Client) Key(name string) string { return c.c.Key(name) }

// Lease is the TTL the lock should ask the server for: Options.TTL,
// stretched as the explorer's dilated time needs, so pass it unchanged.
func (c *Client) Lease() time.Duration { return c.c.Lease() }

// Now is the time on the search's virtual clock.
func (c *Client) Now() time.Time { return c.c.Now() }

// Sleep waits d on the virtual clock, or until ctx ends.
func (c *Client) Sleep(ctx context.Context, d time.Duration) error { return c.c.Sleep(ctx, d) }

// Go runs f in a goroutine the scheduler waits for (a watchdog that
// renews the lease, say); one started with the go statement is outside
// its view.
func (c *Client) Go(f func()) { c.c.Go(f) }

// Holding says the client now believes it holds the lock, for lease
// counted from when it sent its last command (0: a lease that never
// ends). Call it once the acquire succeeded, and again after a renewal.
// After Released, a call from another goroutine than the one running
// Target.Client (a watchdog whose renewal's reply came late) is ignored
// until the next critical section: the hold it would renew has ended.
func (c *Client) Holding(lease time.Duration) { c.c.Holding(lease) }

// Released says the client is about to release the lock: it stops
// believing it holds it when its next command runs. Call it just before
// the release; a watchdog need not have stopped.
func (c *Client) Released() { c.c.Released() }

// A Property is what a lock must keep.
type Property string

// The properties a search checks.
const (
	// MutualExclusion holds when no two clients believe they hold the
	// lock (Client.Holding) at once with leases that have not run out.
	MutualExclusion Property = "mutual_exclusion"
	// Resource holds when Target.Check passes at the end of every
	// schedule.
	Resource Property = "resource"
	// Liveness holds when no client waits for good on a lock that no
	// live client holds.
	Liveness Property = "liveness"
)

// A Mode is how schedules are picked.
type Mode string

// The modes.
const (
	// Exhaustive searches every schedule within the bounds.
	Exhaustive Mode = "exhaustive"
	// Random runs random schedules.
	Random Mode = "random"
	// PCT runs random schedules with few, randomly placed switches
	// between clients.
	PCT Mode = "pct"
)

// A Fault is a kind of fault a search may inject into a schedule: the
// engine's kind, spelled as -faults spells it ("pause-short", "crash").
type Fault = action.Fault

// The kinds of fault. A pause's length is counted against Options.TTL.
const (
	// PauseShort ("pause-short") pauses a client for half a lease, then
	// lets it go on.
	PauseShort Fault = action.FaultPauseShort
	// PauseLong ("pause-long") pauses a client for a lease and a half: a
	// lease it holds runs out meanwhile.
	PauseLong Fault = action.FaultPauseLong
	// PauseForever ("pause-forever") pauses a client for good: alive, it
	// never runs again.
	PauseForever Fault = action.FaultPauseForever
	// Crash ("crash") ends a client: its pending command is never sent.
	Crash Fault = action.FaultCrash
)

// Options bound a search. The zero value searches every schedule of the
// target's clients, one critical section each, with at most one fault of
// any kind, on a network whose delays are unbounded.
type Options struct {
	// Mode is how schedules are picked (Exhaustive when empty).
	Mode Mode
	// Seed seeds the random modes.
	Seed uint64
	// Schedules bounds how many schedules run (0: no bound, or 1,000
	// in a random mode).
	Schedules int
	// Budget bounds the search's time (0: none).
	Budget time.Duration
	// Workers is how many schedules run at once (0: the machine's cores).
	Workers int
	// StopAtFirst ends the search at the first violation.
	StopAtFirst bool
	// Stop ends the search at the first violation of one of these
	// properties.
	Stop []Property
	// Properties are the properties checked (empty: MutualExclusion, and
	// Resource when the target has a Check).
	Properties []Property
	// Iterations is how many critical sections each client runs (1 when
	// 0).
	Iterations int
	// Faults bounds the faults per schedule (1 when 0).
	Faults int
	// FaultKinds are the kinds of fault injected (every kind when empty).
	FaultKinds []Fault
	// NoFaults injects no fault: the search orders the clients' commands
	// and the clock alone. Faults and FaultKinds must then be unset.
	NoFaults bool
	// MaxDelay bounds the network's delay in virtual time: a command a
	// client sent runs before the clock passes MaxDelay after its sending
	// (after a pause's end, when it was paused first), as on a network
	// whose delays are bounded. 0 bounds nothing, as on an asynchronous
	// network. Otherwise it is whole milliseconds, 1ms or more.
	MaxDelay time.Duration
	// TTL is the lease Client.Lease gives, in virtual time (the
	// explorer's default when 0).
	TTL time.Duration
	// StuckAfter is how long, in real time, a client may block outside
	// the scheduler's view before the search ends with ErrStuck (10 s
	// when 0).
	StuckAfter time.Duration
	// Shard, when its Count is above 1, makes an exhaustive search
	// search only one of Count disjoint parts of the schedules: Count
	// searches, one for each Index, run anywhere, search them all, and a
	// violation is found by the one whose part holds it. Exhaustive then
	// says that every schedule of the part ran. exploretest.Check sets
	// it from a test runner's TEST_SHARD_INDEX and TEST_TOTAL_SHARDS.
	Shard Shard
}

// Shard is the Index-th, counted from 0, of Count parts of a search.
type Shard struct{ Index, Count int }

// Errors Check returns; errors.Is finds them in its error, whose message
// says more.
var (
	// ErrNoClient means the Target is nil or has no Client function.
	ErrNoClient = errors.New("explore: the target has no Client function")
	// ErrOption means an Options field, or Target.Clients, holds a value
	// out of range, or names no known mode, property or fault kind.
	ErrOption = errors.New("explore: bad option")
	// ErrStuck means a client blocked outside the scheduler's view (busy,
	// or in a system call) for longer than Options.StuckAfter.
	ErrStuck = errors.New("explore: a client blocked outside the scheduler's view")
	// ErrWallClock means a client waited on the wall clock (time.Sleep,
	// a timer) instead of Client.Sleep.
	ErrWallClock = errors.New("explore: a client waits on the wall clock")
	// ErrOutside means a client sent a command the scheduler cannot hold
	// back: from a goroutine started with the go statement rather than
	// Client.Go.
	ErrOutside = errors.New("explore: a command the explorer cannot hold")
	// ErrTarget means the target's own code failed: a Client function
	// returned an error, say.
	ErrTarget = errors.New("explore: the target failed")
	// ErrUnsteady means the machine stalled longer than a lease's margin,
	// run after run, so that what the search saw cannot be trusted.
	ErrUnsteady = errors.New(
		"explore: the machine stalled longer than a lease's margin, run after run")
)

// engineErrs pairs each of the engine's errors with the one it is here.
var engineErrs = []struct{ engine, user error }{
	{sched.ErrNoClient, ErrNoClient},
	{sched.ErrMode, ErrOption},
	{sched.ErrStuck, ErrStuck},
	{sched.ErrWallClock, ErrWallClock},
	{sched.ErrOutside, ErrOutside},
	{sched.ErrTarget, ErrTarget},
	{sched.ErrUnsteady, ErrUnsteady},
}

// userErr keeps the engine's message and answers to the user's sentinel.
type userErr struct {
	err  error
	user error
}

func (e *userErr) Error() string   { return e.err.Error() }
func (e *userErr) Unwrap() []error { return []error{e.err, e.user} }

// userError is err answering also to the user's sentinel of the engine's
// error it wraps, if any.
func userError(err error) error {
	for _, p := range engineErrs {
		if errors.Is(err, p.engine) {
			return &userErr{err, p.user}
		}
	}
	return err
}

// Check explores t's schedules on rdb, in a namespace of its own, within
// o's bounds, and returns the shortest counterexample of each property
// broken. An error says the search could not be trusted: what it found so
// far is returned with it.
func Check(ctx context.Context, rdb *redis.Client, t *Target, o Options) (*Result, error) {
	if t == nil || t.Client == nil {
		return nil, ErrNoClient
	}
	st, so, err := engine(t, o)
	if err != nil {
		return nil, err
	}
	res, err := sched.CheckTarget(ctx, rdb, st, so)
	if res == nil {
		return nil, userError(err)
	}
	return newResult(res), userError(err)
}

// engine makes the engine's target and options of the user's.
func engine(t *Target, o Options) (*sched.Target, sched.Options, error) {
	bad := func(format string, a ...any) (*sched.Target, sched.Options, error) {
		return nil, sched.Options{}, fmt.Errorf("%w: %s", ErrOption, fmt.Sprintf(format, a...))
	}
	switch o.Mode {
	case "", Exhaustive, Random, PCT:
	default:
		return bad("mode %q: want %s, %s or %s", o.Mode, Exhaustive, Random, PCT)
	}
	m := action.DefaultModel()
	if t.Clients < 0 || o.Iterations < 0 || o.Faults < 0 || o.TTL < 0 || o.Schedules < 0 ||
		o.Workers < 0 || o.Budget < 0 || o.StuckAfter < 0 || o.MaxDelay < 0 {
		return bad("a negative count or duration")
	}
	if err := o.checkShard(); err != nil {
		return bad("%v", err)
	}
	if o.Iterations > 0 {
		m.Iterations = o.Iterations
	}
	if err := faults(&m, o); err != nil {
		return bad("%v", err)
	}
	if o.TTL > 0 {
		m.TTL = o.TTL
	}
	m.MaxDelay = o.MaxDelay
	var setup, check func(ctx context.Context, rdb *redis.Client, ns sched.Namespace) error
	if t.Setup != nil {
		setup = func(ctx context.Context, rdb *redis.Client, ns sched.Namespace) error {
			return t.Setup(ctx, rdb, Namespace(ns))
		}
	}
	if t.Check != nil {
		check = func(ctx context.Context, rdb *redis.Client, ns sched.Namespace) error {
			return t.Check(ctx, rdb, Namespace(ns))
		}
	}
	st := sched.Code(t.Name, t.Clients, setup, func(ctx context.Context, c *sched.Client) error {
		return t.Client(ctx, &Client{c})
	}, check)
	if _, err := m.For(st.Clients); err != nil {
		return bad("%v", err)
	}
	checks, err := names(o.Properties)
	if err != nil {
		return bad("%v", err)
	}
	stop, err := names(o.Stop)
	if err != nil {
		return bad("%v", err)
	}
	return st, sched.Options{Mode: sched.Mode(o.Mode), Seed: o.Seed, Schedules: o.Schedules,
		Budget: o.Budget, Workers: o.Workers, StopAtFirst: o.StopAtFirst, Stop: stop, Check: checks,
		Model: &m, StuckAfter: o.StuckAfter,
		Shard: search.Shard{Index: o.Shard.Index, Count: o.Shard.Count}}, nil
}

// checkShard checks o.Shard: one of its count's, of an exhaustive
// search.
func (o Options) checkShard() error {
	sh := o.Shard
	switch {
	case sh.Count < 0, sh.Count > 1 && (sh.Index < 0 || sh.Index >= sh.Count):
		return fmt.Errorf("shard %d of %d: no such shard", sh.Index, sh.Count)
	case sh.Count > 1 && o.Mode != "" && o.Mode != Exhaustive:
		return fmt.Errorf("a shard of a %s search: only an exhaustive search splits", o.Mode)
	}
	return nil
}

// faults sets m's faults as o says.
func faults(m *action.Model, o Options) error {
	if o.NoFaults {
		if o.Faults != 0 || len(o.FaultKinds) > 0 {
			return errors.New("NoFaults with Faults or FaultKinds set")
		}
		m.Faults, m.FaultKinds = 0, nil
		return nil
	}
	if o.Faults > 0 {
		m.Faults = o.Faults
	}
	if len(o.FaultKinds) == 0 {
		return nil
	}
	m.FaultKinds = nil
	for _, k := range o.FaultKinds {
		if !slices.Contains(allFaults, k) {
			return fmt.Errorf("fault kind %q: want %s, %s, %s or %s",
				k, PauseShort, PauseLong, PauseForever, Crash)
		}
		if !slices.Contains(m.FaultKinds, k) {
			m.FaultKinds = append(m.FaultKinds, k)
		}
	}
	return nil
}

// allFaults lists the kinds of fault, in the engine's order.
var allFaults = []Fault{PauseShort, PauseLong, PauseForever, Crash}

// names checks ps and returns them as the engine names them.
func names(ps []Property) ([]string, error) {
	var out []string
	for _, p := range ps {
		switch p {
		case MutualExclusion, Resource, Liveness:
			out = append(out, string(p))
		default:
			return nil, fmt.Errorf("property %q: want %s, %s or %s",
				p, MutualExclusion, Resource, Liveness)
		}
	}
	return out, nil
}

// A Result is what a search found, and how far it went.
type Result struct {
	// Target is the target's name.
	Target string
	// Mode is how the schedules were picked.
	Mode Mode
	// Schedules is how many complete schedules ran.
	Schedules int
	// Exhaustive is true when every schedule within the bounds ran (or
	// was shown equivalent to one that did).
	Exhaustive bool
	// Stopped says why the search was cut short: "budget" (Options.Budget
	// ran out) or "interrupted" (ctx ended); "" otherwise, a stop at a
	// violation that Options.StopAtFirst or Stop asked for included.
	Stopped string
	// Counterexamples holds the shortest counterexample of each property
	// broken.
	Counterexamples []Counterexample
	// Unsteady holds what broke in the search but not when replayed: the
	// code did something the explorer does not order.
	Unsteady []Counterexample
	// Diverged counts the replays that went another way than their first
	// run: a search with any is no proof.
	Diverged int
	// FromStarted counts, by client name, the commands each client sent
	// from goroutines it started (with Client.Go, or the go statement,
	// however deep in a library), in the schedules counted.
	FromStarted map[string]int
	// TimersFired counts the timers of the clients' code (time.Sleep,
	// time.After, a Timer or Ticker, a context's deadline) that fired on
	// the virtual clock and woke a client, in the schedules counted: 0
	// outside a test (exploretest), where such a wait is refused.
	TimersFired int

	res *result.Result
}

// newResult is the user's view of the engine's result r.
func newResult(r *result.Result) *Result {
	out := &Result{Target: r.Target, Mode: Mode(r.Mode), Schedules: r.Schedules,
		Exhaustive: r.Exhaustive, Stopped: r.Stopped, Diverged: r.Diverged, res: r,
		FromStarted: r.FromStarted, TimersFired: r.TimersFired}
	if out.Mode == "" {
		out.Mode = Exhaustive
	}
	out.Counterexamples = counterexamples(r.Violations)
	out.Unsteady = counterexamples(r.Unsteady)
	return out
}

// counterexamples is the user's view of the engine's findings fs, each
// with its replay's timeline.
func counterexamples(fs []result.Counterexample) []Counterexample {
	var out []Counterexample
	for _, f := range fs {
		c := Counterexample{Property: Property(f.Property), Message: f.Message,
			Reproduced: f.Reproduced, ReplayNote: f.ReplayNote}
		for _, st := range f.Steps {
			s := Step{ClockMS: st.ClockMS, Text: st.Text, Violation: Property(st.Violation)}
			if st.Action.Kind == action.Run || st.Action.Kind == action.Start {
				s.Client = st.Action.Client
			}
			c.Steps = append(c.Steps, s)
		}
		if f.Replay.Events != nil {
			var b bytes.Buffer
			if err := f.Replay.Text(&b, 100, false); err == nil {
				c.Timeline = b.String()
			}
		}
		out = append(out, c)
	}
	return out
}

// WriteSummary writes, for a person, what was explored and how far.
func (r *Result) WriteSummary(w io.Writer) error { return view.WriteSummary(w, r.res) }

// WriteFindings writes, for a person, the properties broken and the first
// counterexample's timeline (and its steps when verbose).
func (r *Result) WriteFindings(w io.Writer, verbose bool) error {
	return view.WriteFindings(w, r.res, verbose)
}

// MarshalJSON writes the result as the explorer's JSON document does.
func (r *Result) MarshalJSON() ([]byte, error) { return r.res.MarshalJSON() }

// A Counterexample is a schedule that breaks a property, shortened.
type Counterexample struct {
	// Property is the property broken.
	Property Property
	// Message says how.
	Message string
	// Steps are the schedule's steps, in order.
	Steps []Step
	// Reproduced is true when a replay on a fresh redis-server broke the
	// property again.
	Reproduced bool
	// ReplayNote says why not, when the replay did not.
	ReplayNote string
	// Timeline is that replay drawn as a timeline, 100 columns wide (""
	// when there was none).
	Timeline string
}

// String lists the steps, then the timeline.
func (c Counterexample) String() string {
	var b strings.Builder
	for i, st := range c.Steps {
		who, mark := "", ""
		if st.Client != "" {
			who = st.Client + ": "
		}
		if st.Violation != "" {
			mark = "  <- " + string(st.Violation)
		}
		fmt.Fprintf(&b, "%3d. %-9s %s%s%s\n", i+1, action.FormatMS(st.ClockMS), who, st.Text, mark)
	}
	if c.Timeline != "" {
		b.WriteString("\n" + c.Timeline)
	}
	return b.String()
}

// A Step is one step of a schedule.
type Step struct {
	// ClockMS is the virtual time at which it ran.
	ClockMS int64
	// Client names the client that took it ("" for the clock or a
	// fault).
	Client string
	// Text says what happened.
	Text string
	// Violation is the property broken at this step, if any.
	Violation Property
}
