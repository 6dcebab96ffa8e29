package search_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/search"
)

func binomial(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
	}
	return r
}

func exhaustive(
	t *testing.T,
	sys []search.System[choice, move],
	o search.Options[move],
) search.Result[move] {
	t.Helper()
	s := search.New(sys, o)
	if err := s.Exhaustive(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return s.Result()
}

// TestCountIsMultinomial: without reductions, threads of a, b (and c)
// steps have (a+b+c)!/(a!b!c!) schedules, every one complete, on one
// worker and on three; the coverage is 1.
func TestCountIsMultinomial(t *testing.T) {
	for _, tc := range []struct{ a, b, c int }{
		{0, 0, 0}, {1, 0, 0}, {2, 1, 0}, {3, 3, 0}, {4, 4, 0}, {2, 2, 2}, {3, 2, 1},
	} {
		progs := [][]op{steps(tc.a, 0), steps(tc.b, 0)}
		if tc.c > 0 {
			progs = append(progs, steps(tc.c, 0))
		}
		want := binomial(tc.a+tc.b, tc.a) * binomial(tc.a+tc.b+tc.c, tc.c)
		for _, workers := range []int{1, 3} {
			res := exhaustive(
				t,
				systems(&toy{progs: progs, vars: 1, counter: -1}, workers),
				search.Options[move]{},
			)
			if res.Schedules != want || res.Pruned != 0 || !res.Exhaustive || res.Coverage != 1 {
				t.Errorf(
					"%+v, %d workers: %d schedules (%d pruned, "+
						"exhaustive %v, coverage %v), want %d",
					tc,
					workers,
					res.Schedules,
					res.Pruned,
					res.Exhaustive,
					res.Coverage,
					want,
				)
			}
		}
	}
}

// TestSleepSetsIndependentThreads: threads on variables of their own
// commute entirely: one schedule, and the rest pruned, covered all the
// same.
func TestSleepSetsIndependentThreads(t *testing.T) {
	sys := &toy{
		progs:   [][]op{{load(0), inc(0)}, {load(1), inc(1)}, {load(2), inc(2)}},
		vars:    3,
		counter: -1,
	}
	res := exhaustive(t, systems(sys, 1), search.Options[move]{Sleep: true})
	if res.Schedules != 1 || !res.Exhaustive || res.Coverage != 1 {
		t.Errorf(
			"%d schedules (%d pruned, exhaustive %v, coverage %v), want 1",
			res.Schedules,
			res.Pruned,
			res.Exhaustive,
			res.Coverage,
		)
	}
}

// finals runs an exhaustive search and returns the final states of the
// complete runs.
func finals(t *testing.T, sys *toy, o search.Options[move]) (map[string]bool, search.Result[move]) {
	t.Helper()
	seen := map[string]bool{}
	rec := &recorder{toy: sys, seen: seen}
	res := exhaustive(t, []search.System[choice, move]{rec}, o)
	return seen, res
}

// recorder is a toy that notes the final state of every complete run.
type recorder struct {
	*toy
	seen map[string]bool
}

func (r *recorder) Run(ctx context.Context, choose search.Chooser[choice]) (search.Outcome, error) {
	out, err := r.toy.Run(ctx, choose)
	if err == nil && out.Complete {
		r.seen[out.Data.(end).vars] = true
	}
	return out, err
}

// TestReductionsKeepEveryFinalState: the sleep sets and the state cache
// reach every final state the full search reaches, with fewer schedules,
// and find the same violations.
func TestReductionsKeepEveryFinalState(t *testing.T) {
	models := map[string]*toy{
		"two counters": {
			progs: [][]op{
				{load(0), inc(0), load(1), inc(1)},
				{load(1), inc(1)},
				{load(0), inc(0)},
			},
			vars:    2,
			counter: 0,
		},
		"lock and noise": {
			progs: [][]op{
				{load(0), enter(0), leave(0)},
				{load(0), enter(0), leave(0)},
				{load(1), inc(1), load(1), inc(1)},
			},
			vars:    2,
			counter: 1,
		},
		"crashes": {
			progs:   [][]op{{load(0), inc(0), load(0), inc(0)}, {load(0), inc(0)}},
			vars:    1,
			counter: 0,
			faults:  1,
		},
	}
	for name, m := range models {
		full, fres := finals(t, m.clone(), search.Options[move]{})
		opts := []search.Options[move]{{Sleep: true}, {Cache: true}, {Sleep: true, Cache: true}}
		for _, o := range opts {
			got, res := finals(t, m.clone(), o)
			if !maps.Equal(full, got) {
				t.Errorf(
					"%s, %+v: final states %v, the full search %v",
					name,
					o,
					slices.Sorted(maps.Keys(got)),
					slices.Sorted(maps.Keys(full)),
				)
			}
			if res.Schedules >= fres.Schedules || !res.Exhaustive || res.Coverage != 1 {
				t.Errorf(
					"%s, %+v: %d schedules (exhaustive %v, coverage %v), the full search %d",
					name,
					o,
					res.Schedules,
					res.Exhaustive,
					res.Coverage,
					fres.Schedules,
				)
			}
			a := slices.Sorted(maps.Keys(res.Violations))
			if b := slices.Sorted(maps.Keys(fres.Violations)); !slices.Equal(a, b) {
				t.Errorf("%s, %+v: found %v, the full search %v", name, o, a, b)
			}
			for p, f := range fres.Violations {
				if g := res.Violations[p]; len(g.Path) != len(f.Path) {
					t.Errorf(
						"%s, %+v: %s in %d steps, the full search %d",
						name,
						o,
						p,
						len(g.Path),
						len(f.Path),
					)
				}
			}
		}
	}
}

// TestWorkersRunTheSameSchedules: without the cache, three workers run
// the schedules one runs and keep the same counterexamples; with it, they
// find the same properties broken.
func TestWorkersRunTheSameSchedules(t *testing.T) {
	m := &toy{
		progs: [][]op{
			{load(0), enter(0), leave(0)},
			{load(0), enter(0), leave(0)},
			{load(1), inc(1)},
		},
		vars:    2,
		counter: 1,
		faults:  1,
	}
	for _, o := range []search.Options[move]{{}, {Sleep: true}, {Sleep: true, Cache: true}} {
		one := exhaustive(t, systems(m.clone(), 1), o)
		many := exhaustive(t, systems(m.clone(), 3), o)
		if !one.Exhaustive || !many.Exhaustive || many.Coverage != 1 {
			t.Errorf(
				"%+v: exhaustive %v and %v (coverage %v)",
				o,
				one.Exhaustive,
				many.Exhaustive,
				many.Coverage,
			)
		}
		if !o.Cache && (one.Schedules != many.Schedules || one.Pruned != many.Pruned) {
			t.Errorf(
				"%+v: one worker %d schedules (+%d pruned), three %d (+%d)",
				o,
				one.Schedules,
				one.Pruned,
				many.Schedules,
				many.Pruned,
			)
		}
		if len(one.Violations) == 0 || len(one.Violations) != len(many.Violations) {
			t.Fatalf("%+v: found %v and %v", o, one.Violations, many.Violations)
		}
		for p, f := range one.Violations {
			g := many.Violations[p]
			if !o.Cache && !slices.Equal(f.Path, g.Path) || len(f.Path) != len(g.Path) {
				t.Errorf("%+v: %s found as %v by one worker, as %v by three", o, p, f.Path, g.Path)
			}
		}
	}
}

// TestVoidRunsRunAgain: a run voided (ErrRetry) is run again, and counts
// nowhere.
func TestVoidRunsRunAgain(t *testing.T) {
	m := &toy{progs: [][]op{{load(0), inc(0)}, {load(0), inc(0)}}, vars: 1, counter: 0, faults: 1}
	want := exhaustive(t, systems(m.clone(), 1), search.Options[move]{Sleep: true})
	v := m.clone()
	v.voidEvery = 3
	got := exhaustive(t, systems(v, 1), search.Options[move]{Sleep: true})
	if got.Schedules != want.Schedules || got.Pruned != want.Pruned || !got.Exhaustive ||
		got.Coverage != 1 {
		t.Errorf("voiding every third run: %+v, want %+v", got.Stats, want.Stats)
	}
	always := m.clone()
	always.voidEvery = 1
	s := search.New(systems(always, 1), search.Options[move]{})
	if err := s.Exhaustive(context.Background(), nil); !errors.Is(err, search.ErrRetries) {
		t.Errorf("every run void: %v, want ErrRetries", err)
	}
}

// TestDivergedIsNotExhaustive: a system whose replays go another way is
// searched as far as it can be, and the search says it is not
// exhaustive.
func TestDivergedIsNotExhaustive(t *testing.T) {
	m := &toy{
		progs:   [][]op{{load(0), inc(0)}, {load(0), inc(0)}},
		vars:    1,
		counter: -1,
		diverge: true,
	}
	res := exhaustive(t, systems(m, 1), search.Options[move]{})
	if res.Diverged == 0 || res.Exhaustive || res.Coverage >= 1 {
		t.Errorf(
			"diverged %d, exhaustive %v, coverage %v",
			res.Diverged,
			res.Exhaustive,
			res.Coverage,
		)
	}
}

// TestStopKeepsWhatItHas: a search whose context ends returns its error
// and what it found so far: the runs counted, the coverage between 0 and
// 1, not exhaustive; so does one stopped at its first violation.
func TestStopKeepsWhatItHas(t *testing.T) {
	m := &toy{
		progs: [][]op{
			{load(0), enter(0), leave(0)},
			{load(0), enter(0), leave(0)},
			{load(1), inc(1), load(1)},
		},
		vars:    2,
		counter: 1,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at := 0
	s := search.New(systems(m.clone(), 1), search.Options[move]{Progress: func(st search.Stats) {
		if len(st.Found) > 0 && at == 0 {
			at = st.Schedules
			cancel()
		}
	}})
	err := s.Exhaustive(ctx, nil)
	res := s.Result()
	if !errors.Is(err, context.Canceled) || at == 0 || res.Schedules != at || res.Exhaustive ||
		res.Coverage <= 0 ||
		res.Coverage >= 1 {
		t.Errorf(
			"cancelled at the first violation, schedule %d: "+
				"%v, %d schedules, exhaustive %v, coverage %v",
			at,
			err,
			res.Schedules,
			res.Exhaustive,
			res.Coverage,
		)
	}
	if len(res.Violations) == 0 {
		t.Errorf("cancelled at the first violation: none kept")
	}
	first := search.New(systems(m.clone(), 1), search.Options[move]{StopAtFirst: true})
	if err := first.Exhaustive(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if r := first.Result(); len(r.Violations) != 1 || r.Exhaustive || r.Coverage >= 1 {
		t.Errorf(
			"stopped at the first: %v, exhaustive %v, coverage %v",
			r.Violations,
			r.Exhaustive,
			r.Coverage,
		)
	}
}

// TestShrink: a counterexample found by a random walk, noise included,
// shrinks to the four steps of the race: both threads read the lock free,
// then both take it.
func TestShrink(t *testing.T) {
	m := &toy{progs: [][]op{{load(0), enter(0), leave(0)}, {load(0), enter(0), leave(0)},
		{load(1), inc(1), load(2), inc(2), load(1), inc(1)}}, vars: 3, counter: -1}
	s := search.New(systems(m, 1), search.Options[move]{Stop: []string{"mutex"}})
	if err := s.Walk(context.Background(), 7, 500); err != nil {
		t.Fatal(err)
	}
	f, ok := s.Result().Violations["mutex"]
	if !ok {
		t.Fatal("the walk found no mutex violation")
	}
	first := func(d search.Decision[choice]) (int, bool) { return 0, true }
	g, err := search.Shrink(context.Background(), search.System[choice, move](m), f, first)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Path) != 4 {
		t.Fatalf("shrunk %v (%d steps) to %v, want 4 steps", f.Path, len(f.Path), g.Path)
	}
	r, err := search.Replay(context.Background(), search.System[choice, move](m), g.Path, nil)
	if err != nil || len(r.Violations) == 0 || r.Violations[0].Step != 3 {
		t.Errorf("replay of %v: %v, %v", g.Path, r, err)
	}
	sys := search.System[choice, move](m)
	if _, err := search.Replay(context.Background(), sys, []move{{Thread: 5}}, nil); !errors.Is(
		err,
		search.ErrNotEnabled,
	) {
		t.Errorf("replay of a thread that does not exist: %v, want ErrNotEnabled", err)
	}
}

// TestRandomIsReproducible: a walk and pct from one seed run the same
// schedules and find the same counterexample twice; both find the race.
func TestRandomIsReproducible(t *testing.T) {
	m := &toy{
		progs: [][]op{
			{load(0), enter(0), leave(0)},
			{load(0), enter(0), leave(0)},
			{load(1), inc(1), load(1), inc(1)},
		},
		vars:    2,
		counter: 1,
		faults:  1,
	}
	for _, mode := range []string{"walk", "pct"} {
		var got []string
		for range 2 {
			var paths []string
			rec := &pathRecorder{toy: m.clone(), paths: &paths}
			s := search.New([]search.System[choice, move]{rec}, search.Options[move]{})
			var err error
			if mode == "walk" {
				err = s.Walk(context.Background(), 11, 60)
			} else {
				err = s.PCT(context.Background(), 11, 60, 3, 12)
			}
			if err != nil {
				t.Fatal(err)
			}
			res := s.Result()
			if _, ok := res.Violations["mutex"]; !ok || res.Schedules != 60 || res.Coverage <= 0 ||
				res.Coverage >= 1 {
				t.Errorf(
					"%s: found %v in %d schedules, coverage %v",
					mode,
					res.Found,
					res.Schedules,
					res.Coverage,
				)
			}
			got = append(got, fmt.Sprint(paths, res.Violations["mutex"].Path))
		}
		if got[0] != got[1] {
			t.Errorf("%s from seed 11 twice: different schedules", mode)
		}
	}
}

// pathRecorder is a toy that notes every run's path.
type pathRecorder struct {
	*toy
	paths *[]string
}

func (r *pathRecorder) Run(
	ctx context.Context,
	choose search.Chooser[choice],
) (search.Outcome, error) {
	out, path, err := r.runNotingPath(ctx, choose)
	*r.paths = append(*r.paths, fmt.Sprint(path))
	return out, err
}

// TestCoverageOfAWalk: random walks cover the weight of the distinct
// schedules they ran: all of a tree of two schedules after enough walks.
func TestCoverageOfAWalk(t *testing.T) {
	m := &toy{progs: [][]op{{load(0)}, {load(0)}}, vars: 1, counter: -1}
	s := search.New(systems(m, 1), search.Options[move]{})
	if err := s.Walk(context.Background(), 1, 1); err != nil {
		t.Fatal(err)
	}
	if c := s.Result().Coverage; c != 0.5 {
		t.Errorf("one walk of two schedules: coverage %v, want 0.5", c)
	}
	if err := s.Walk(context.Background(), 2, 50); err != nil {
		t.Fatal(err)
	}
	if c := s.Result().Coverage; c < 0.99 || c >= 1 {
		t.Errorf(
			"fifty walks of two schedules: coverage %v, want "+
				"just below 1 (walks are never exhaustive)",
			c,
		)
	}
}

// TestSymmetryKeepsEveryFinalState: with threads of one program whose
// states are named up to their order (Decision.Rename), the cache
// reaches every final state the full search reaches, finds the same
// violations as soon, in fewer schedules than without the symmetry, on
// one worker and on three.
func TestSymmetryKeepsEveryFinalState(t *testing.T) {
	prog := func(p ...op) [][]op { return [][]op{p, p, p} }
	models := map[string]*toy{
		"lock":     {progs: prog(load(0), enter(0), leave(0)), vars: 1, counter: -1},
		"counter":  {progs: prog(load(0), inc(0), load(1)), vars: 2, counter: 0},
		"crashes":  {progs: prog(load(0), enter(0), leave(0)), vars: 1, counter: -1, faults: 1},
		"two vars": {progs: prog(load(0), inc(1), inc(0)), vars: 2, counter: 0},
	}
	for name, m := range models {
		full, fres := lockedFinals(t, m, 1, search.Options[move]{})
		plain, pres := lockedFinals(t, m, 1, search.Options[move]{Sleep: true, Cache: true})
		for _, workers := range []int{1, 3} {
			sym := m.clone()
			sym.symmetric = true
			got, res := lockedFinals(
				t,
				sym,
				workers,
				search.Options[move]{Sleep: true, Cache: true},
			)
			t.Logf(
				"%s, %d workers: %d schedules, %d without the symmetry, %d without reductions",
				name,
				workers,
				res.Schedules,
				pres.Schedules,
				fres.Schedules,
			)
			if !maps.Equal(full, got) || !maps.Equal(full, plain) {
				t.Errorf("%s, %d workers: final states %v, the full search %v", name, workers,
					slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(full)))
			}
			if !res.Exhaustive || res.Coverage != 1 ||
				workers == 1 && res.Schedules >= pres.Schedules {
				t.Errorf(
					"%s, %d workers: %d schedules (exhaustive %v, "+
						"coverage %v), %d without the symmetry",
					name,
					workers,
					res.Schedules,
					res.Exhaustive,
					res.Coverage,
					pres.Schedules,
				)
			}
			a := slices.Sorted(maps.Keys(res.Violations))
			if b := slices.Sorted(maps.Keys(fres.Violations)); !slices.Equal(a, b) {
				t.Errorf("%s, %d workers: found %v, the full search %v", name, workers, a, b)
			}
			for p, f := range fres.Violations {
				if g := res.Violations[p]; len(g.Path) != len(f.Path) {
					t.Errorf(
						"%s, %d workers: %s in %d steps, the full search %d",
						name,
						workers,
						p,
						len(g.Path),
						len(f.Path),
					)
				}
			}
		}
	}
}

// lockedFinals is finals on several workers.
func lockedFinals(
	t *testing.T,
	m *toy,
	workers int,
	o search.Options[move],
) (map[string]bool, search.Result[move]) {
	t.Helper()
	return finalsBy(t, m, workers, o, func(e end) string { return e.vars })
}

// finalsBy runs an exhaustive search of m on several workers and notes
// each final state as key says.
func finalsBy(t *testing.T, m *toy, workers int, o search.Options[move],
	key func(end) string) (map[string]bool, search.Result[move]) {
	t.Helper()
	seen := map[string]bool{}
	var mu sync.Mutex
	var sys []search.System[choice, move]
	for range workers {
		sys = append(sys, &lockedRecorder{toy: m.clone(), seen: seen, mu: &mu, key: key})
	}
	return seen, exhaustive(t, sys, o)
}

// lockedRecorder is a recorder whose notes several workers share.
type lockedRecorder struct {
	*toy
	seen map[string]bool
	mu   *sync.Mutex
	key  func(end) string
}

func (r *lockedRecorder) Run(
	ctx context.Context,
	choose search.Chooser[choice],
) (search.Outcome, error) {
	out, err := r.toy.Run(ctx, choose)
	if err == nil && out.Complete {
		r.mu.Lock()
		r.seen[r.key(out.Data.(end))] = true
		r.mu.Unlock()
	}
	return out, err
}

// TestDPORKeepsEveryFinalState: with dynamic partial-order reduction (and
// sleep sets), on one worker and on three, the search reaches every
// final state the search without reductions reaches (variables,
// registers, where each thread stopped, which crashed) and breaks the
// same properties, on the toys above and on random toys; never more
// schedules than with sleep sets alone on one worker.
func TestDPORKeepsEveryFinalState(t *testing.T) {
	models := map[string]*toy{
		"two counters": {
			progs: [][]op{
				{load(0), inc(0), load(1), inc(1)},
				{load(1), inc(1)},
				{load(0), inc(0)},
			},
			vars:    2,
			counter: 0,
		},
		"lock and noise": {
			progs: [][]op{
				{load(0), enter(0), leave(0)},
				{load(0), enter(0), leave(0)},
				{load(1), inc(1), load(1), inc(1)},
			},
			vars:    2,
			counter: 1,
		},
		"crashes": {
			progs:   [][]op{{load(0), inc(0), load(0), inc(0)}, {load(0), inc(0)}},
			vars:    1,
			counter: 0,
			faults:  1,
		},
		"independent": {
			progs:   [][]op{{load(0), inc(0)}, {load(1), inc(1)}, {load(2), inc(2)}},
			vars:    3,
			counter: 0,
		},
	}
	rng := rand.New(rand.NewPCG(7, 40))
	kinds := []func(int) op{load, inc, enter, leave}
	for n := range 30 {
		m := &toy{vars: 2, counter: rng.IntN(2), faults: rng.IntN(2)}
		for range 2 + rng.IntN(2) {
			var p []op
			for range 1 + rng.IntN(3) {
				p = append(p, kinds[rng.IntN(len(kinds))](rng.IntN(2)))
			}
			m.progs = append(m.progs, p)
		}
		models[fmt.Sprintf("random %d %v", n, m.progs)] = m
	}
	var plain, reduced, cut, dporCut int
	for name, m := range models {
		full, fres := allFinals(t, m, 1, search.Options[move]{})
		_, sres := allFinals(t, m, 1, search.Options[move]{Sleep: true})
		for _, workers := range []int{1, 3} {
			got, res := allFinals(
				t,
				m,
				workers,
				search.Options[move]{Sleep: true, DPOR: true, Cache: true},
			)
			if !maps.Equal(full, got) {
				t.Errorf("%s, %d workers: final states %v, the full search %v", name, workers,
					slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(full)))
			}
			if !res.Exhaustive || res.Coverage != 1 ||
				workers == 1 && res.Schedules > sres.Schedules {
				t.Errorf(
					"%s, %d workers: %d schedules (exhaustive %v, "+
						"coverage %v), %d with sleep sets alone",
					name,
					workers,
					res.Schedules,
					res.Exhaustive,
					res.Coverage,
					sres.Schedules,
				)
			}
			a := slices.Sorted(maps.Keys(res.Violations))
			if b := slices.Sorted(maps.Keys(fres.Violations)); !slices.Equal(a, b) {
				t.Errorf("%s, %d workers: found %v, the full search %v", name, workers, a, b)
			}
			if workers == 1 {
				plain, reduced = plain+sres.Schedules, reduced+res.Schedules
				cut, dporCut = cut+sres.Pruned, dporCut+res.Pruned
			}
		}
	}
	t.Logf(
		"one worker, in all: %d schedules (+%d cut) with sleep sets, %d (+%d) with DPOR too",
		plain,
		cut,
		reduced,
		dporCut,
	)
}

// allFinals is lockedFinals, each final state in full.
func allFinals(
	t *testing.T,
	m *toy,
	workers int,
	o search.Options[move],
) (map[string]bool, search.Result[move]) {
	t.Helper()
	return finalsBy(t, m, workers, o, func(e end) string { return e.all })
}
