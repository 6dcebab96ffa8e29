package search_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/search"
)

// shardRecorder is a toy that notes the path and the final state of every
// complete run, for the workers of one search.
type shardRecorder struct {
	*toy
	mu     *sync.Mutex
	paths  map[string]int // complete paths, by how often they ran
	lens   map[string]int // their lengths
	finals map[string]bool
}

func (r *shardRecorder) Run(
	ctx context.Context,
	choose search.Chooser[choice],
) (search.Outcome, error) {
	out, path, err := r.runNotingPath(ctx, choose)
	if err == nil && out.Complete {
		r.mu.Lock()
		r.paths[fmt.Sprint(path)]++
		r.lens[fmt.Sprint(path)] = len(path)
		e := out.Data.(end)
		if r.symmetric {
			// Threads alike: a state and its images under the symmetry
			// are one; their variables tell them apart enough.
			r.finals[e.vars] = true
		} else {
			r.finals[e.all] = true
		}
		r.mu.Unlock()
	}
	return out, err
}

// shardRun is what one search (a shard, or the whole) ran and found.
type shardRun struct {
	res    search.Result[move]
	paths  map[string]int
	lens   map[string]int
	finals map[string]bool
}

// searchShard searches m's part sh on workers workers.
func searchShard(
	t *testing.T, m *toy, workers int, o search.Options[move], sh search.Shard,
) shardRun {
	t.Helper()
	r := shardRun{paths: map[string]int{}, lens: map[string]int{}, finals: map[string]bool{}}
	var mu sync.Mutex
	var sys []search.System[choice, move]
	for range workers {
		sys = append(sys, &shardRecorder{toy: m.clone(), mu: &mu, paths: r.paths, lens: r.lens,
			finals: r.finals})
	}
	o.Shard = sh
	s := search.New(sys, o)
	if err := s.Exhaustive(context.Background(), nil); err != nil {
		t.Fatalf("shard %s: %v", sh, err)
	}
	r.res = s.Result()
	return r
}

// shardModels are toys with schedules enough to split: a lock, a
// counter, crashes, and threads alike (for the symmetry).
func shardModels() map[string]*toy {
	prog := func(p ...op) [][]op { return [][]op{p, p, p} }
	return map[string]*toy{
		"lock and noise": {
			progs: [][]op{
				{load(0), enter(0), leave(0)},
				{load(0), enter(0), leave(0)},
				{load(1), inc(1), load(1), inc(1)},
			},
			vars: 2, counter: 1, faults: 1,
		},
		"counter": {progs: prog(load(0), inc(0), load(1)), vars: 2, counter: 0},
		"symmetric lock": {progs: prog(load(0), enter(0), leave(0)), vars: 1, counter: -1,
			faults: 1, symmetric: true},
	}
}

// TestShardsSplitTheSearch: split N ways, the shards cut the tree alike
// (one digest), each is exhaustive on its part, their coverages add up
// to 1, and they find what the whole search finds, as short. Without the
// state cache, every schedule the whole search runs is run by exactly
// one shard, and the counts add up to the whole's; with it, the shards
// reach every final state the whole search reaches.
func TestShardsSplitTheSearch(t *testing.T) {
	for name, m := range shardModels() {
		opts := []search.Options[move]{{Sleep: true}, {Sleep: true, Cache: true}}
		if !testing.Short() && name == "counter" {
			opts = append(opts, search.Options[move]{}) // the largest tree
		}
		for _, o := range opts {
			whole := searchShard(t, m, 1, o, search.Shard{})
			if whole.res.Split != nil {
				t.Fatalf("%s: the whole search has a split: %+v", name, whole.res.Split)
			}
			for _, n := range []int{2, 5} {
				for _, workers := range []int{1, 3} {
					if workers > 1 && testing.Short() {
						continue
					}
					what := fmt.Sprintf("%s, %+v, %d shards, %d workers", name, o, n, workers)
					checkShards(t, what, m, workers, o, n, whole)
				}
			}
		}
	}
}

// checkShards searches m in n shards and compares them with the whole
// search.
func checkShards(
	t *testing.T, what string, m *toy, workers int, o search.Options[move], n int,
	whole shardRun,
) {
	t.Helper()
	paths := map[string]int{} // the complete schedules the shards ran, by how often
	finals := map[string]bool{}
	var schedules, pruned int
	var coverage float64
	shortest := map[string]int{}
	var digest string
	for i := range n {
		r := searchShard(t, m, workers, o, search.Shard{Index: i, Count: n})
		sp := r.res.Split
		switch {
		case sp == nil:
			t.Fatalf("%s: shard %d has no split", what, i)
		case i == 0:
			digest = sp.Digest
		case sp.Digest != digest:
			t.Errorf("%s: shard %d cut the tree as %s, shard 0 as %s", what, i, sp.Digest, digest)
		}
		if sp.Subtrees < n {
			t.Errorf("%s: %d subtrees for %d shards", what, sp.Subtrees, n)
		}
		if !r.res.Exhaustive {
			t.Errorf("%s: shard %d not exhaustive", what, i)
		}
		schedules += r.res.Schedules
		pruned += r.res.Pruned
		coverage += r.res.Coverage
		for p, k := range r.paths {
			if r.lens[p] <= sp.Depth {
				// Ended above the split: every shard ran it, one counted it.
				paths[p] = 1
				continue
			}
			paths[p] += k
		}
		maps.Copy(finals, r.finals)
		for p, f := range r.res.Violations {
			if l, ok := shortest[p]; !ok || len(f.Path) < l {
				shortest[p] = len(f.Path)
			}
		}
	}
	if math.Abs(coverage-1) > 1e-9 {
		t.Errorf("%s: the shards cover %v of the tree", what, coverage)
	}
	if !maps.Equal(finals, whole.finals) {
		t.Errorf("%s: the shards reach %d final states, the whole search %d",
			what, len(finals), len(whole.finals))
	}
	for p, f := range whole.res.Violations {
		if shortest[p] != len(f.Path) {
			t.Errorf("%s: %s in %d steps, the whole search %d", what, p, shortest[p], len(f.Path))
		}
	}
	if len(shortest) != len(whole.res.Violations) {
		t.Errorf("%s: found %v, the whole search %v", what, slices.Sorted(maps.Keys(shortest)),
			slices.Sorted(maps.Keys(whole.res.Violations)))
	}
	if o.Cache {
		if schedules < whole.res.Schedules {
			t.Errorf("%s: %d schedules, fewer than the whole search's %d",
				what, schedules, whole.res.Schedules)
		}
		return
	}
	if schedules != whole.res.Schedules || pruned != whole.res.Pruned {
		t.Errorf("%s: %d schedules (+%d pruned), the whole search %d (+%d)",
			what, schedules, pruned, whole.res.Schedules, whole.res.Pruned)
	}
	// Every schedule of the whole search ran in exactly one shard, once.
	if !maps.Equal(paths, whole.paths) {
		twice := 0
		for _, k := range paths {
			if k > 1 {
				twice++
			}
		}
		t.Errorf("%s: the shards ran %d distinct schedules (%d more than once), "+
			"the whole search %d", what, len(paths), twice, len(whole.paths))
	}
}

// TestShardOutOfRange: a shard that is not one of its count's is an
// error.
func TestShardOutOfRange(t *testing.T) {
	m := shardModels()["counter"]
	for _, sh := range []search.Shard{{Index: 2, Count: 2}, {Index: -1, Count: 3}} {
		s := search.New([]search.System[choice, move]{m.clone()},
			search.Options[move]{Shard: sh})
		if err := s.Exhaustive(context.Background(), nil); !errors.Is(err, search.ErrShard) {
			t.Errorf("shard %s: %v, want ErrShard", sh, err)
		}
	}
}

// TestShardsRecount: split 2, 3 or 4 ways with the state cache on, each
// shard on one worker records what it searched, and Recount over the
// records counts exactly the whole search's complete and cut runs, though
// the shards, each with a cache of its own, ran more between them (in
// one case at least: else the test would show nothing).
func TestShardsRecount(t *testing.T) {
	ranMore := false
	models := shardModels()
	void := *models["lock and noise"]
	void.voidEvery = 7 // runs run again: what they recorded is forgotten
	models["lock and noise, void runs"] = &void
	for name, m := range models {
		o := search.Options[move]{Sleep: true, Cache: true}
		whole := searchShard(t, m, 1, o, search.Shard{})
		for _, n := range []int{2, 3, 4} {
			var parts []*search.Explored[move]
			ran := 0
			for i := range n {
				r := searchShard(t, m, 1, o, search.Shard{Index: i, Count: n})
				if r.res.Explored == nil {
					t.Fatalf("%s, shard %d/%d: no record", name, i, n)
				}
				parts = append(parts, r.res.Explored)
				ran += r.res.Schedules
			}
			st, err := search.Recount(parts)
			if err != nil || st.Schedules != whole.res.Schedules || st.Pruned != whole.res.Pruned {
				t.Errorf("%s, %d shards: recounted %d schedules (+%d cut), %v; the whole "+
					"search %d (+%d)", name, n, st.Schedules, st.Pruned, err,
					whole.res.Schedules, whole.res.Pruned)
			}
			t.Logf("%s, %d shards: the whole search %d schedules (+%d cut), the shards ran %d",
				name, n, whole.res.Schedules, whole.res.Pruned, ran)
			ranMore = ranMore || ran > whole.res.Schedules
			slices.Reverse(parts) // the order of the parts given does not matter
			if again, err := search.Recount(parts); err != nil || again.Schedules != st.Schedules {
				t.Errorf("%s, %d shards, reversed: %d schedules, %v", name, n, again.Schedules, err)
			}
		}
	}
	if !ranMore {
		t.Error("no split made the shards run more schedules than the whole search")
	}
}

// TestShardRecordOnlyWhereExact: a shard keeps no record where its
// search is not the whole search's, part for part: on several workers
// (they share a cache in the order they get to it), or without the state
// cache (the counts add up without one).
func TestShardRecordOnlyWhereExact(t *testing.T) {
	m := shardModels()["counter"]
	for _, tc := range []struct {
		o       search.Options[move]
		workers int
	}{
		{search.Options[move]{Sleep: true, Cache: true}, 2},
		{search.Options[move]{Sleep: true}, 1},
	} {
		r := searchShard(t, m, tc.workers, tc.o, search.Shard{Index: 0, Count: 2})
		if r.res.Explored != nil {
			t.Errorf("%+v on %d workers: a record of %d nodes", tc.o, tc.workers,
				r.res.Explored.Nodes)
		}
	}
}
