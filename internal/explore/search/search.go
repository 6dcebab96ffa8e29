package search

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
)

// Fingerprint names a state of a system: two runs at one fingerprint go
// on alike, whatever comes next.
type Fingerprint [32]byte

// Decision is one decision of a run.
type Decision[C any] struct {
	// Depth is how many choices the run has taken.
	Depth int
	// Enabled is the choices that may come next, never empty.
	Enabled []C
	// State fingerprints the state the run has reached; ok is false when
	// the system cannot tell. Nil: the system keeps no fingerprints.
	State func() (fp Fingerprint, ok bool)
	// Rename, when set, says that State names the state only up to a
	// symmetry of the system (threads that run the same code, swapped):
	// two states with one fingerprint are images of each other, and
	// Rename is a choice's image in the state State names, so that a
	// choice of one and its image in the other have one identity (Key).
	// It is called only after State, and only when ok.
	Rename func(c C) C
}

// Chooser picks the index of the next choice at a decision; ok false ends
// the run there, incomplete.
type Chooser[C any] func(d Decision[C]) (i int, ok bool)

// System is what the search needs of a system under test. C is a choice
// as the system enables it; K is its identity.
type System[C any, K comparable] interface {
	// Run runs one schedule from the system's initial state, asking
	// choose at each decision. An error that wraps ErrRetry voids the run:
	// it is run again as if it had not happened.
	Run(ctx context.Context, choose Chooser[C]) (Outcome, error)
	// Key is a choice's identity: the same choice in two runs of one
	// schedule has the same key, and two choices of one decision differ.
	Key(c C) K
	// Independent reports whether two choices enabled at one decision
	// commute: taken in either order, they reach the same state, and
	// neither disables the other.
	Independent(a, b C) bool
	// Fault reports whether a choice is a fault (Walk and PCT take
	// faults apart from the others).
	Fault(c C) bool
	// Owner is the thread a choice moves, for PCT's priorities.
	Owner(c C) string
}

// Outcome is what a run of a system ended with.
type Outcome struct {
	// Complete is set when the run ended because nothing was enabled (or
	// at a bound of the system's), not because its chooser cut it.
	Complete bool
	// Violations is the properties the run broke.
	Violations []Violation
	// Data is the system's own record of the run.
	Data any
}

// Violation is a property found broken.
type Violation struct {
	// Property names it.
	Property string `json:"property"`
	// Message says how.
	Message string `json:"message"`
	// Step is the index of the choice at which it broke.
	Step int `json:"step"`
}

// Run is one run: the choices it took, and its outcome.
type Run[K comparable] struct {
	Outcome
	Path []K
}

// Found is a property's counterexample.
type Found[K comparable] struct {
	Violation
	// Path is the choices up to the violation, the one that broke it
	// last.
	Path []K
	// Run is the run it was found in.
	Run *Run[K]
}

// Options configures a Search.
type Options[K comparable] struct {
	// Sleep turns on the sleep sets, Cache the state cache.
	Sleep, Cache bool
	// DPOR turns on dynamic partial-order reduction in Exhaustive: a
	// decision explores only the children that reverse a race of the
	// runs below it (and every fault). It turns the state cache off: a
	// run cut at a state explored before would hide the races of what
	// follows from the decisions above it.
	DPOR bool
	// Keep, when set, says which properties count (nil: every one).
	Keep func(property string) bool
	// Stop ends the search once a violation of each of these properties
	// has been found; StopAtFirst at the first violation.
	Stop        []string
	StopAtFirst bool
	// Less orders two counterexamples of one length, to keep the same one
	// whatever the workers' order (nil: by their text).
	Less func(a, b K) int
	// Progress, when set, is called after each run counted, with the
	// counts so far; calls do not overlap.
	Progress func(Stats)
	// Shard, when its Count is above 1, makes Exhaustive search only that
	// part of the tree (see Shard).
	Shard Shard
}

// Stats is how far a search has got.
type Stats struct {
	// Schedules is the number of complete runs; Pruned the number cut
	// short because every continuation had been covered already.
	Schedules, Pruned int
	// Found names the properties found broken so far, sorted.
	Found []string
}

// Result is what a search found.
type Result[K comparable] struct {
	Stats
	// Diverged is the number of runs whose replay of a path went another
	// way (a choice of the path was not enabled at its turn).
	Diverged int
	// Exhaustive is set when every schedule was covered.
	Exhaustive bool
	// Coverage is the fraction of the search tree covered (see the
	// package doc); 1 exactly when Exhaustive.
	Coverage float64
	// Violations holds, by property, the shortest counterexample found.
	Violations map[string]Found[K]
	// Split is how a sharded exhaustive search cut the tree (nil for
	// the whole search). Exhaustive then says that every schedule of
	// the shard's part was covered, and Coverage is the fraction of the
	// whole tree the part covered: the shards' fractions add up to 1.
	Split *Split
	// Explored is what a shard searched of the state graph, for Recount:
	// set when the shard was exhaustive on one system with the state
	// cache (and without DPOR), and its record stayed within MaxExplored.
	Explored *Explored[K]
}

// ErrRetry is wrapped by the error of a run that must be run again.
var ErrRetry = errors.New("search: the run is void")

// ErrRetries is returned when a run was void MaxRetries times in a row.
var ErrRetries = errors.New("search: the run was void, run after run")

// MaxRetries is how many times a void run is run before ErrRetries.
const MaxRetries = 50

// ErrNotEnabled is returned when a choice of a path is not enabled at its
// turn.
var ErrNotEnabled = errors.New("search: planned choice not enabled")

// Search searches one system's schedules, on one system per worker.
type Search[C any, K comparable] struct {
	systems []System[C, K]
	o       Options[K]

	mu       sync.Mutex
	stats    Stats
	diverged int
	found    map[string]Found[K]
	// covered is the weight of the subtrees the exhaustive search
	// covered; walked the weight of the distinct complete schedules the
	// random searches ran.
	covered  big.Rat
	dfsRan   bool
	walked   big.Rat
	walkSeen map[string]bool
	complete bool
	// cache is the state cache of the exhaustive search (Exhaustive),
	// one for every worker.
	cache cache[K]
	// split is how a sharded search cut the tree, and explored what it
	// searched (graph.go).
	split    *Split
	explored *Explored[K]
}

// New returns a search of the system, each system of systems a worker
// (all alike, each with a state of its own). There must be one at least.
func New[C any, K comparable](systems []System[C, K], o Options[K]) *Search[C, K] {
	if len(systems) == 0 {
		panic("search: no system")
	}
	if o.Less == nil {
		o.Less = func(a, b K) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }
	}
	return &Search[C, K]{
		systems:  systems,
		o:        o,
		found:    map[string]Found[K]{},
		walkSeen: map[string]bool{},
	}
}

// Result is what the search has found so far.
func (s *Search[C, K]) Result() Result[K] {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Result[K]{Stats: s.statsLocked(), Diverged: s.diverged, Exhaustive: s.complete,
		Violations: map[string]Found[K]{}}
	for p, f := range s.found {
		r.Violations[p] = f
	}
	cov := &s.walked
	if s.dfsRan {
		cov = &s.covered
	}
	r.Coverage, _ = cov.Float64()
	if s.split != nil {
		split := *s.split
		r.Split = &split
		r.Explored = s.explored
	}
	switch {
	case s.complete && r.Split != nil:
		// A shard's share of the tree, as covered.
	case s.complete:
		r.Coverage = 1
	case r.Coverage >= 1:
		// Not exhaustive (a subtree diverged): never round up to all.
		r.Coverage = 1 - 1e-9
	}
	return r
}

func (s *Search[C, K]) statsLocked() Stats {
	st := s.stats
	st.Found = nil
	for p := range s.found {
		st.Found = append(st.Found, p)
	}
	slices.Sort(st.Found)
	return st
}

// record counts a run and keeps its violations.
func (s *Search[C, K]) record(r *Run[K]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Complete {
		s.stats.Schedules++
	} else {
		s.stats.Pruned++
	}
	for _, v := range r.Violations {
		if s.o.Keep != nil && !s.o.Keep(v.Property) {
			continue
		}
		n := v.Step + 1
		if n > len(r.Path) {
			n = len(r.Path)
		}
		f, ok := s.found[v.Property]
		if !ok || n < len(f.Path) ||
			n == len(f.Path) && comparePaths(r.Path[:n], f.Path, s.o.Less) < 0 {
			s.found[v.Property] = Found[K]{Violation: v, Path: slices.Clone(r.Path[:n]), Run: r}
		}
	}
	if s.o.Progress != nil {
		s.o.Progress(s.statsLocked())
	}
}

// comparePaths orders two paths choice by choice, then by length.
func comparePaths[K comparable](a, b []K, less func(a, b K) int) int {
	for i := range min(len(a), len(b)) {
		if c := less(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// Reached reports whether the search has found what it was told to stop
// at (Options.Stop, Options.StopAtFirst).
func (s *Search[C, K]) Reached() bool { return s.stop() }

// stop reports whether the search has found what it was told to stop at.
func (s *Search[C, K]) stop() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.o.StopAtFirst && len(s.found) > 0 {
		return true
	}
	if len(s.o.Stop) == 0 {
		return false
	}
	for _, p := range s.o.Stop {
		if _, ok := s.found[p]; !ok {
			return false
		}
	}
	return true
}

// runOnce runs sys once: the choices of plan, then those choose picks.
// It returns the run, and the weight of the path it took (the product,
// over its decisions, of one over the number of choices enabled).
func runOnce[C any, K comparable](
	ctx context.Context,
	sys System[C, K],
	plan []K,
	choose Chooser[C],
) (*Run[K], *big.Rat, error) {
	var path []K
	weight := big.NewRat(1, 1)
	var diverged error
	out, err := sys.Run(ctx, func(d Decision[C]) (int, bool) {
		i, ok := 0, false
		if d.Depth < len(plan) {
			i = slices.IndexFunc(d.Enabled, func(c C) bool { return sys.Key(c) == plan[d.Depth] })
			if i < 0 {
				var names []string
				for _, c := range d.Enabled {
					names = append(names, fmt.Sprint(sys.Key(c)))
				}
				diverged = fmt.Errorf(
					"%w: step %d: %v (enabled: %s)",
					ErrNotEnabled,
					d.Depth+1,
					plan[d.Depth],
					strings.Join(names, "; "),
				)
				return 0, false
			}
			ok = true
		} else if choose != nil {
			i, ok = choose(d)
		}
		if ok {
			path = append(path, sys.Key(d.Enabled[i]))
			weight.Mul(weight, big.NewRat(1, int64(len(d.Enabled))))
		}
		return i, ok
	})
	if err == nil {
		err = diverged
	}
	return &Run[K]{Outcome: out, Path: path}, weight, err
}

// runAgain runs sys as runOnce; when the run is void, it runs the
// choices it took again, then asks choose only past them, so that a
// chooser that draws random numbers draws no more for the choices it
// made already.
func runAgain[C any, K comparable](
	ctx context.Context,
	sys System[C, K],
	plan []K,
	choose Chooser[C],
) (*Run[K], *big.Rat, error) {
	var last error
	for range MaxRetries {
		r, w, err := runOnce(ctx, sys, plan, choose)
		if !errors.Is(err, ErrRetry) {
			return r, w, err
		}
		last = err
		if len(r.Path) > len(plan) {
			plan = slices.Clone(r.Path)
		}
	}
	return nil, nil, fmt.Errorf("%w: %w", ErrRetries, last)
}

// Replay runs sys once: the choices of plan, each of which must be
// enabled at its turn (else ErrNotEnabled), then those then picks (nil:
// none). A void run is run again.
func Replay[C any, K comparable](
	ctx context.Context,
	sys System[C, K],
	plan []K,
	then Chooser[C],
) (*Run[K], error) {
	r, _, err := runAgain(ctx, sys, plan, then)
	return r, err
}

// Shrink shortens a counterexample: it drops one choice of its path at a
// time, and keeps each drop after which the replay (then is the chooser
// past the plan) still breaks the property, sooner.
func Shrink[C any, K comparable](
	ctx context.Context,
	sys System[C, K],
	f Found[K],
	then Chooser[C],
) (Found[K], error) {
	best := f
	for changed := true; changed; {
		changed = false
		for i := len(best.Path) - 1; i >= 0 && !changed; i-- {
			cand := slices.Delete(slices.Clone(best.Path), i, i+1)
			r, err := Replay(ctx, sys, cand, then)
			if errors.Is(err, ErrNotEnabled) {
				continue
			}
			if err != nil {
				return f, err
			}
			for _, v := range r.Violations {
				if v.Property == f.Property && v.Step+1 < len(best.Path) && v.Step < len(r.Path) {
					best = Found[K]{Violation: v, Path: slices.Clone(r.Path[:v.Step+1]), Run: r}
					changed = true
				}
			}
		}
	}
	return best, nil
}
