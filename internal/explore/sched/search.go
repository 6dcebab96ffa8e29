package sched

// A search through the schedules: its options and modes, the workers,
// the random walks, and what it found, shortened.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/search"
)

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
	// different clients sharing no key one of them may write,
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
			fs = append(fs, counterexampleOf(f))
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
		search.Found[action.Action]{Violation: f.Violation, Path: f.Actions}, firstCommand)
	if err != nil {
		return f, SearchErr(err)
	}
	if g.Run == nil {
		return f, nil // nothing shorter
	}
	return counterexampleOf(g), nil
}

// counterexampleOf is a counterexample of the search as the explorer reports it.
func counterexampleOf(f search.Found[action.Action]) result.Counterexample {
	s := f.Run.Data.(*Schedule)
	n := min(len(f.Path), len(s.Steps))
	return result.Counterexample{
		Violation: f.Violation,
		Actions:   slices.Clone(f.Path[:n]),
		Steps:     slices.Clone(s.Steps[:n]),
	}
}

// probeSchedules is how many random schedules a search for a
// counterexample, or a search with a budget, tries before it goes
// through every schedule (they count among its schedules; the coverage is
// the exhaustive search's).
const probeSchedules = 300
