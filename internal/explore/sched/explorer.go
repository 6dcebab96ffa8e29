package sched

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/redis/go-redis/v9"
)

// Explorer runs a target's clients under the scheduler against one Redis.
// Each client has a go-redis client of its own (RESP2, no identity
// commands, no retries), carrying the hook that holds its commands.
type Explorer struct {
	// stuckAfter is Options.StuckAfter of the search running; between
	// searches, what SetStuckAfter set (by default defaultStuckAfter).
	stuckAfter time.Duration
	Redis      *redis.Client // the scheduler's own: resets, clock ticks, checks
	// Probe is a connection as the clients' user that no schedule holds:
	// for the target's own code that the scheduler runs itself, outside
	// a client (a recipe's liveness probe), which must have no more
	// rights than the clients when Redis is the administrative user.
	Probe   *redis.Client
	clients []*redis.Client
	// slots is, by client, where the hooks of its go-redis clients find
	// the client of the schedule running.
	slots []*slot
	// wall is, by client, what it waited on the wall clock in the
	// explorer's schedules.
	wall      []*wallWait
	target    *Target
	model     action.Model
	KeyPrefix string // the namespace of the target's keys (Prefix)
	epoch     time.Time
	resetAt   int64 // the server's time of the last reset, µs
	// prepared is, for a target whose Prepare is PrepareOnce, the keys it
	// wrote as SnapshotScript gives them, once it has run.
	prepared []any
	// unkept is set when the server could not keep the set-up's keys.
	unkept bool
	// nodeResetAt is, for a target of several nodes, each node's server
	// time at the last reset, µs.
	nodeResetAt []int64
	// Factor is the dilation of time: Dilation (tests of the reruns set
	// 1, where a stall of the machine runs a lease down as much).
	Factor int64
	Reruns atomic.Int64
	// Symmetric is set, for a search, when the state cache takes the
	// target's clients as alike but for their names (symmetry.go).
	Symmetric bool
	// Stall, when set (by tests), is called after each advance of the
	// clock with the shortest lease left on the virtual clock (0 for
	// none), before any client goes on: it may stall, as a busy machine
	// does.
	Stall func(left time.Duration)
	// For a parallel search: the Redis and the target the explorer was
	// made from, and the explorers of the other workers (lanes), made on
	// first use and closed by Close.
	base    *redis.Client
	control *redis.Options // what Redis is made from (NewControlled)
	orig    *Target
	lanes   []*Explorer
	// act is what the complete schedules of the current search saw.
	act activity
	// strays keeps, during a search, the violations of the runs that did
	// not end by themselves (a replay that diverged, among them), which
	// the search does not count: shared with the lanes.
	strays *strays
}

// strays is the shortest counterexample, by property, seen in a run that
// did not end by itself.
type strays struct {
	mu    sync.Mutex
	found map[string]result.Counterexample
}

// add keeps s's violations where they are the shortest of their property.
func (st *strays) add(s *Schedule) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, v := range s.Violations {
		n := min(v.Step+1, len(s.actions), len(s.Steps))
		if f, ok := st.found[v.Property]; ok && len(f.Actions) <= n {
			continue
		}
		st.found[v.Property] = result.Counterexample{
			Violation: v,
			Actions:   slices.Clone(s.actions[:n]),
			Steps:     slices.Clone(s.Steps[:n]),
		}
	}
}

// New returns an explorer of t under model m on the Redis base talks to.
// The target's keys live under a fresh namespace, deleted by Close.
func New(ctx context.Context, base *redis.Client, t *Target, m action.Model) (*Explorer, error) {
	return NewControlled(ctx, base, base.Options(), t, m)
}

// NewControlled is New with the scheduler's own connection (Redis: its
// resets, clock ticks, reads of the state, the liveness probe's DUMP and
// RESTORE) made from control rather than from base's options: on a
// server whose clients log in as a confined user, which may not run KEYS
// or RESTORE (redisserver.Confinement), control is its administrative
// user's (redisserver.Server.AdminOptions). The target's code runs as base's user only, the probes' too
// (Probe).
func NewControlled(
	ctx context.Context, base *redis.Client, control *redis.Options, t *Target, m action.Model,
) (*Explorer, error) {
	m, err := m.For(t.Clients)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 5)
	rand.Read(b)
	tc := *t
	tc.ns = "{explore-" + hex.EncodeToString(b) + "}:"
	if tc.Workload.Run == nil && tc.Lock == nil {
		return nil, ErrNoClient
	}
	e := &Explorer{
		target:     &tc,
		model:      m,
		KeyPrefix:  tc.ns,
		base:       base,
		control:    control,
		orig:       t,
		Factor:     plumbing.Dilation,
		stuckAfter: defaultStuckAfter,
	}
	opts, ctl := ownOptions(base.Options()), ownOptions(control)
	e.Redis = redis.NewClient(&ctl)
	probe := opts
	e.Probe = redis.NewClient(&probe)
	for range m.Clients {
		o := opts
		o.PoolSize = 4
		c := redis.NewClient(&o)
		s := &slot{}
		c.AddHook(plumbing.Hook{Gate: s})
		e.clients = append(e.clients, c)
		e.slots = append(e.slots, s)
		e.wall = append(e.wall, &wallWait{})
	}
	if err := e.openNodes(opts, ctl); err != nil {
		e.Close()
		return nil, err
	}
	if check := tc.lock().Check; check != nil {
		if err := check(ctx, e.Redis, tc.ns); err != nil {
			e.Close()
			return nil, err
		}
	}
	if err := e.reset(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close deletes the namespace and closes the clients.
func (e *Explorer) Close() error {
	for _, l := range e.lanes {
		l.Close()
	}
	e.lanes = nil
	pattern := NamespacePattern(e.KeyPrefix)
	err := plumbing.ResetScript.Run(context.Background(), e.Redis, nil, pattern).Err()
	if nerr := e.closeNodes(); err == nil {
		err = nerr
	}
	for _, c := range e.clients {
		c.Close()
	}
	e.Probe.Close()
	e.Redis.Close()
	return err
}

// ownOptions are the options of the explorer's connections made from o:
// RESP2, no retry, nothing pushed.
func ownOptions(o *redis.Options) redis.Options {
	opts := *o
	opts.Protocol = 2
	opts.DisableIdentity = true
	opts.MaxRetries = -1
	opts.MaintNotificationsConfig = nil
	opts.PushNotificationProcessor = nil
	return opts
}

// Target is the explored target.
func (e *Explorer) Target() *Target { return e.target }

// SetStuckAfter sets how long, in real time, a schedule run outside a
// search (stepped by hand) waits with no client moving before it ends
// with ErrStuck; 0 restores the default (10 s). A caller that bounds
// each step itself, by processor time and a wall-clock backstop of its
// own, sets it beyond that backstop, so that its own bounds decide. A
// search uses Options.StuckAfter. Call it before the first step.
func (e *Explorer) SetStuckAfter(d time.Duration) { e.stuckAfter = cmp.Or(d, defaultStuckAfter) }

// Model is the explored model.
func (e *Explorer) Model() action.Model { return e.model }

// Resource describes the state of the resource a target with a workload
// of its own protects (the market's listing and buyers); "" for the
// generic workload, whose resource is the key Prefix()+"counter".
func (e *Explorer) Resource(ctx context.Context) (string, error) {
	if e.target.Workload.Resource == nil {
		return "", nil
	}
	return e.target.Workload.Resource(ctx, e.Redis, e.KeyPrefix)
}

// Prefix is the namespace of the target's keys.
func (e *Explorer) Prefix() string { return e.KeyPrefix }

// reset deletes the namespace's keys, so that each schedule starts from
// the same empty state, and starts the virtual clock afresh. A target's
// Prepare sets up the state each schedule starts from; one that is
// PrepareOnce runs once, and its keys are restored in the reset after.
func (e *Explorer) reset(ctx context.Context) error {
	e.epoch = virtualEpoch
	args := append([]any{NamespacePattern(e.KeyPrefix)}, e.prepared...)
	at, err := plumbing.ResetScript.Run(ctx, e.Redis, nil, args...).Int64()
	if err != nil {
		return fmt.Errorf("explore: resetting the namespace: %w", err)
	}
	e.resetAt = at
	if err := e.resetNodes(ctx); err != nil {
		return fmt.Errorf("explore: resetting the namespace: %w", err)
	}
	if e.target.Workload.Prepare == nil || e.prepared != nil {
		return nil
	}
	if err := e.target.Workload.Prepare(ctx, e.Redis, e.KeyPrefix); err != nil {
		return fmt.Errorf("explore: setting up the target: %w", err)
	}
	if e.target.Workload.PrepareOnce && !e.unkept {
		kept, err := plumbing.SnapshotScript.Run(ctx, e.Redis, nil,
			NamespacePattern(e.KeyPrefix)).StringSlice()
		if err != nil {
			// A server on which the snapshot fails: Prepare runs
			// before every schedule, as for any other target.
			e.unkept = true
			return nil
		}
		e.prepared = make([]any, 0, len(kept))
		for _, k := range kept {
			e.prepared = append(e.prepared, k)
		}
	}
	return nil
}

// virtualEpoch is the time the clients' clock reads at the start of every
// schedule: the same in every run, so that every value made from it (a
// lease's end written into a key, ${now_ms}) is too.
var virtualEpoch = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

// Mode is how a search goes through the schedules.
type Mode string

// The modes.
const (
	// Exhaustive is depth-first over every schedule within the model's
	// bounds (the default: an empty Mode).
	Exhaustive Mode = "exhaustive"
	// Random is Options.Schedules random walks from Options.Seed.
	Random Mode = "random"
	// PCT is Options.Schedules runs of probabilistic concurrency testing:
	// random priorities, Options.Depth-1 changes of priority, from
	// Options.Seed.
	PCT Mode = "pct"
)

// ErrMode is returned for a Mode that is none of the modes.
var ErrMode = errors.New("explore: unknown mode")

// ParseMode reads a mode's name; "" is Exhaustive.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return Exhaustive, nil
	case Exhaustive, Random, PCT:
		return m, nil
	}
	return "", fmt.Errorf("%w %q: want %s, %s or %s", ErrMode, s, Exhaustive, Random, PCT)
}

// Options configures a search.
type Options struct {
	// Mode is how the search goes (Exhaustive when empty); another value
	// is an error (ErrMode).
	Mode Mode
	// Seed and Schedules configure the random and pct modes.
	Seed      uint64
	Schedules int
	// Depth is the pct mode's bug depth d (default 3): each schedule
	// lowers the running client's priority at d-1 random steps, which
	// finds a bug that needs d ordering constraints with probability at
	// least 1/(n·k^(d-1)) per schedule, for n clients and k steps.
	Depth int
	// NoReduction turns off the reductions: the sleep sets (steps of
	// different clients on different keys, or only reading the same ones,
	// are explored in one order only) and the state cache (NoStateCache).
	NoReduction bool
	// NoStateCache turns off the state cache: a schedule that reaches a
	// state (world.fingerprint) some schedule of the same search reached
	// before, with a sleep set no larger, is cut there: what follows was
	// explored then.
	NoStateCache bool
	// DPOR turns on dynamic partial-order reduction (search.Options.DPOR)
	// in an exhaustive search, in place of the state cache (and so of the
	// symmetry, which acts through it): it runs no schedule that only
	// reorders the commuting steps of one run before, and cuts none at a
	// state seen before. Which of the two runs fewer schedules depends on
	// the target (docs/explorer.md).
	DPOR bool
	// NoSymmetry keeps the state cache from taking a state and the state
	// with clients' names swapped as one (symmetry.go), for a target
	// whose clients are alike but for their names.
	NoSymmetry bool
	// Stop ends the search once a violation of each of these properties
	// has been found (the search is then not exhaustive).
	Stop []string
	// StopAtFirst ends the search at the first violation found.
	StopAtFirst bool
	// Check is the properties to check (nil: the target's Checks).
	Check []string
	// NoShrink keeps counterexamples as found instead of shortening them.
	NoShrink bool
	// Progress, if set, is called about every 5 s.
	Progress func(Progress)
	// Workers is how many schedules run at once in an exhaustive search
	// that looks for every violation (no Stop, no StopAtFirst); each
	// worker has a namespace and connections of its own. 0: the
	// machine's cores (runtime.GOMAXPROCS).
	// The violations found do not depend on it (of two counterexamples
	// of one length, the first in the order of the actions is kept);
	// without the state cache the same schedules are run; with it,
	// which the workers share, the counts depend on which worker gets
	// where first.
	Workers int

	// Budget, when above 0, is how long the search may take: it stops, as when
	// its context ends, a fifth of the budget (at most a few seconds) before
	// it, and the result holds what it found so far (Result.Stopped says why),
	// shortened and replayed in what is left. An exhaustive search with a
	// budget begins with a few hundred random schedules (as one with
	// StopAtFirst does).
	Budget time.Duration

	// Model is the bounds of a search made by Check (nil: DefaultModel,
	// with the target's clients); an Explorer's are New's.
	Model *action.Model

	// StuckAfter is how long the scheduler waits, in real time, with no
	// client moving (sending a command, going to sleep on its clock,
	// finishing) before it ends the search with ErrStuck (0: 10 s). A
	// slow machine moves slowly but moves; a blocked client does not
	// move at all.
	StuckAfter time.Duration

	Prefix []action.Action // every schedule starts with these (FindFrom)

	// Shard, when its Count is above 1, makes an exhaustive search
	// search one of Count disjoint parts of the tree (search.Shard): the
	// shards of one search, run anywhere, cover its schedules together,
	// and MergeShards makes one result of theirs. A shard runs no random
	// schedules first (Budget, StopAtFirst); another mode is an error.
	Shard search.Shard
}

// Progress is how far a search has got.
type Progress struct {
	Schedules int
	Elapsed   time.Duration
	Found     []string
}

// Explore searches the target's schedules within the model's bounds.
// When ctx ends, it returns what it found so far (the counts, the
// coverage, the violations, not shortened) with ctx's error.
func (e *Explorer) Explore(ctx context.Context, o Options) (*result.Result, error) {
	start := time.Now()
	ctx, stopSearch := SearchContext(ctx, o.Budget)
	defer stopSearch()
	check := o.Check
	if check == nil {
		check = e.target.Checks
	}
	check = e.target.ExclusionNames(check)
	if e.target.lock().Ops == nil {
		// Only a recipe says which lease its holder asks for, and which
		// replies claim a hold (ownership judges those).
		check = slices.DeleteFunc(
			slices.Clone(check),
			func(p string) bool { return p == result.Lease || p == result.Ownership },
		)
	}
	mode, err := ParseMode(string(o.Mode))
	if err != nil {
		return nil, err
	}
	if o.Shard.Count > 1 && mode != Exhaustive {
		return nil, fmt.Errorf("%w: a %s search does not split (an exhaustive one does)",
			search.ErrShard, mode)
	}
	res := &result.Result{
		Target:      e.target.Name,
		About:       e.target.About,
		Model:       e.model,
		Mode:        string(mode),
		Checked:     check,
		Budget:      o.Budget,
		OwnProperty: e.target.Property,
		NodeCount:   e.target.Nodes(),
	}
	reruns := func() (n int64) {
		for _, x := range append([]*Explorer{e}, e.lanes...) {
			n += x.Reruns.Load()
		}
		return n
	}
	reruns0 := reruns()
	defer func() { res.Reruns = int(reruns() - reruns0) }()
	for _, x := range append([]*Explorer{e}, e.lanes...) {
		x.act.reset()
	}
	e.strays = &strays{found: map[string]result.Counterexample{}}
	defer func() { e.strays = nil }()
	systems, err := e.workers(ctx, mode, o)
	if err != nil {
		return res, err
	}
	stuckAfter, between := cmp.Or(o.StuckAfter, defaultStuckAfter), e.stuckAfter
	for _, x := range append([]*Explorer{e}, e.lanes...) {
		x.stuckAfter = stuckAfter
	}
	defer func() {
		for _, x := range append([]*Explorer{e}, e.lanes...) {
			x.stuckAfter = between
		}
	}()
	sym := !o.NoReduction && !o.NoStateCache && !o.DPOR && !o.NoSymmetry &&
		e.target.symmetric(e.model)
	for _, x := range append([]*Explorer{e}, e.lanes...) {
		x.Symmetric = sym
	}
	last := time.Now()
	s := search.New(systems, search.Options[action.Action]{
		Sleep:       !o.NoReduction,
		Cache:       !o.NoReduction && !o.NoStateCache,
		DPOR:        !o.NoReduction && o.DPOR,
		Keep:        func(p string) bool { return slices.Contains(check, p) },
		Stop:        o.Stop,
		StopAtFirst: o.StopAtFirst,
		Less:        action.CompareAction,
		Shard:       o.Shard,
		Progress: func(st search.Stats) {
			if o.Progress == nil || time.Since(last) < 5*time.Second {
				return
			}
			last = time.Now()
			var found []string
			for _, p := range result.Properties() {
				if slices.Contains(st.Found, p) {
					found = append(found, p)
				}
			}
			o.Progress(Progress{Schedules: st.Schedules, Elapsed: time.Since(start), Found: found})
		},
	})
	if mode != Exhaustive {
		res.Seed = o.Seed
	}
	err = e.walk(ctx, s, mode, o)
	r := s.Result()
	report(res, e.target, append([]*Explorer{e}, e.lanes...))
	res.Schedules, res.Pruned, res.Diverged = r.Schedules, r.Pruned, r.Diverged
	res.Exhaustive, res.Coverage = r.Exhaustive, r.Coverage
	res.Shard = result.ShardOf(o.Shard, r)
	var fs []result.Counterexample
	for _, p := range result.Properties() {
		if f, ok := r.Violations[p]; ok {
			fs = append(fs, found(f))
		} else if f, ok := e.strays.found[p]; ok && r.Diverged > 0 && slices.Contains(check, p) {
			// Seen only in a run whose replay diverged: replayed like
			// any other, it is a violation if it breaks again, else
			// unsteady.
			fs = append(fs, f)
		}
	}
	shrink := e.shrink
	if o.NoShrink {
		shrink = nil
	}
	return e.conclude(ctx, res, fs, SearchErr(err), shrink, start)
}

// workers returns the systems an exhaustive search runs on: the explorer
// and as many of its lanes (explorers of their own, opened once and kept)
// as o.Workers asks, less one; the explorer alone for any other search.
func (e *Explorer) workers(
	ctx context.Context, mode Mode, o Options,
) ([]search.System[Choice, action.Action], error) {
	systems := []search.System[Choice, action.Action]{System{e}}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if mode != Exhaustive || o.Workers <= 1 || o.StopAtFirst || len(o.Stop) > 0 ||
		o.Prefix != nil {
		return systems, nil
	}
	for len(e.lanes) < o.Workers-1 {
		l, err := NewControlled(ctx, e.base, e.control, e.orig, e.model)
		if err != nil && ctx.Err() != nil {
			break // stopped already: the search says so
		}
		if err != nil {
			return nil, err
		}
		e.lanes = append(e.lanes, l)
	}
	for _, l := range e.lanes[:min(len(e.lanes), o.Workers-1)] {
		l.strays = e.strays
		systems = append(systems, System{l})
	}
	return systems, nil
}

// walk runs the search s in mode: random or pct walks of o.Schedules
// schedules, or the exhaustive search (after a random probe when looking
// for a counterexample or working to a budget).
func (e *Explorer) walk(
	ctx context.Context, s *search.Search[Choice, action.Action], mode Mode, o Options,
) error {
	switch mode {
	case Random, PCT:
		n := o.Schedules
		if n <= 0 {
			n = 1000
		}
		if mode == PCT {
			d := o.Depth
			if d <= 0 {
				d = 3
			}
			m := e.model
			return s.PCT(ctx, o.Seed, n, d, m.Steps*m.Clients+m.Ticks+m.Faults)
		}
		return s.Walk(ctx, o.Seed, n)
	default:
		var err error
		if (o.StopAtFirst || len(o.Stop) > 0 || o.Budget > 0) && o.Prefix == nil &&
			o.Shard.Count <= 1 {
			// Looking for a counterexample, or for as much as a budget
			// allows: try random schedules first, which reach deep
			// schedules early, then every schedule.
			err = s.Walk(ctx, 1, probeSchedules)
		}
		if err == nil && !s.Reached() {
			err = s.Exhaustive(ctx, o.Prefix)
		}
		return err
	}
}

// shrink shortens a counterexample (search.Shrink), replaying with the
// first enabled command or tick past its actions.
func (e *Explorer) shrink(ctx context.Context, f result.Counterexample) (result.Counterexample, error) {
	g, err := search.Shrink(ctx, search.System[Choice, action.Action](System{e}),
		search.Found[action.Action]{Violation: f.Violation, Path: f.Actions}, first)
	if err != nil {
		return f, SearchErr(err)
	}
	if g.Run == nil {
		return f, nil // nothing shorter
	}
	return found(g), nil
}

// found is a counterexample of the search as the explorer reports it.
func found(f search.Found[action.Action]) result.Counterexample {
	s := f.Run.Data.(*Schedule)
	n := min(len(f.Path), len(s.Steps))
	return result.Counterexample{
		Violation: f.Violation,
		Actions:   slices.Clone(f.Path[:n]),
		Steps:     slices.Clone(s.Steps[:n]),
	}
}

// SearchErr is an error of the search as the explorer says it.
func SearchErr(err error) error {
	if errors.Is(err, search.ErrRetries) {
		return ErrUnsteady
	}
	return err
}

// probeSchedules is how many random schedules a search for a
// counterexample, or a search with a budget, tries before it goes
// through every schedule (they count among its schedules; the coverage is
// the exhaustive search's).
const probeSchedules = 300

// System is an explorer as the search sees it: a schedule is a run of the
// target's clients, a choice an enabled action, its identity the action.
type System struct{ Explorer *Explorer }

// Run runs one schedule, its choices made by choose, and tallies it if
// it completed.
func (s System) Run(ctx context.Context, choose search.Chooser[Choice]) (search.Outcome, error) {
	sc, err := s.Explorer.runOnce(ctx, choose)
	if sc == nil {
		return search.Outcome{}, err
	}
	if err == nil && sc.Complete {
		s.Explorer.act.tally(sc.world)
	}
	if !sc.Complete && len(sc.Violations) > 0 && s.Explorer.strays != nil &&
		!errors.Is(err, search.ErrRetry) {
		s.Explorer.strays.add(sc)
	}
	return search.Outcome{Complete: sc.Complete, Violations: sc.Violations, Data: sc}, err
}

// Key is a choice's identity: its action.
func (System) Key(c Choice) action.Action { return c.Action }

// Independent reports whether two choices commute (for the sleep sets).
func (System) Independent(a, b Choice) bool { return independent(a, b) }

// Fault reports whether a choice strikes a fault (Model.Faults bounds them).
func (System) Fault(c Choice) bool { return c.IsFault() }

// Owner is the thread a choice moves, for pct.
func (System) Owner(c Choice) string { return owner(c.Action) }

// owner is the thread an action moves, for pct: the clock for a tick,
// the node a node fault strikes, else the client.
func owner(a action.Action) string {
	switch {
	case a.Kind == action.Tick:
		return "clock"
	case a.Node != "" && a.IsFault():
		return a.Node
	}
	return a.Client
}

// first is the chooser of replays: the first enabled command or tick,
// never a fault.
func first(d search.Decision[Choice]) (int, bool) {
	for i, c := range d.Enabled {
		if c.Kind == action.Run || c.Kind == action.Tick {
			return i, true
		}
	}
	return 0, false
}

// replay runs one schedule: actions, then the first enabled command or
// tick at each step.
func (e *Explorer) replay(ctx context.Context, actions []action.Action) (*Schedule, error) {
	r, err := search.Replay(ctx, search.System[Choice, action.Action](System{e}), actions, first)
	if err != nil {
		return nil, SearchErr(err)
	}
	return r.Data.(*Schedule), nil
}

// Replay runs one schedule: actions, then the first enabled command or
// tick at each step until nothing is enabled. It returns the steps and
// the violations found.
func (e *Explorer) Replay(ctx context.Context, actions []action.Action) ([]action.Step, []result.Violation, error) {
	s, err := e.replay(ctx, actions)
	if err != nil {
		return nil, nil, err
	}
	return s.Steps, s.Violations, nil
}
