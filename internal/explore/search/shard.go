package search

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
)

// Shard names one of several disjoint parts of an exhaustive search
// (Options.Shard): the Index-th, counted from 0, of Count. A Count of 0
// or 1 is the whole search.
//
// Every shard of a search runs the decisions above a split depth alike:
// the same runs, the same state cache and sleep sets, so the same list
// of parts (units), in the same order. The parts are the subtrees found
// at the split depth and the runs that ended above it; the k-th subtree
// goes to shard k mod Count, and so does the k-th run. A shard then
// searches its subtrees as dfs would, with a state cache of its own:
// every entry it counts on below the split is one of its own runs, which
// it finishes, and the entries above the split are the runs every shard
// made, whose subtrees are the parts that together the shards search.
// Without the cache, the shards run exactly the schedules the whole
// search runs; with it, a state two shards reach is searched by both
// (the whole search would search it once), so their counts add up to as
// many or more.
type Shard struct{ Index, Count int }

// String is the shard as "i/N".
func (sh Shard) String() string { return fmt.Sprintf("%d/%d", sh.Index, sh.Count) }

// ErrShard is returned for a Shard whose Index is not 0 to Count-1.
var ErrShard = errors.New("search: no such shard")

// Split is how a sharded search cut its tree: alike in every shard of one
// search of one system.
type Split struct {
	// Depth is the depth below the root where the subtrees were cut.
	Depth int
	// Subtrees and Runs are the parts dealt to the shards: the subtrees
	// at Depth, and the runs that ended above it.
	Subtrees, Runs int
	// Digest names the parts, in order (their paths), so that shards of
	// one search can be told to have cut alike.
	Digest string
}

// dealt is a part of the tree dealt to this shard: a subtree to search,
// or a run that ended above the split; index is its place among the
// parts.
type dealt[C any, K comparable] struct {
	index int
	task  *task[C, K]
	run   *Run[K]
}

// unit is one part of a sharded search's tree.
type unit[C any, K comparable] struct {
	path     []K         // the subtree's prefix, or the run's path
	task     *task[C, K] // the subtree at the split, if the run reached it
	run      *Run[K]     // else the run, which ended above it
	diverged bool        // the run's replay went another way
	credit   *big.Rat    // the weight of the tree the run covered
}

const (
	// shardSubtrees is how many subtrees per shard the split aims at: it
	// goes one decision deeper until it has as many (or the tree ends).
	shardSubtrees = 4
	// maxSplitDepth bounds the split's depth.
	maxSplitDepth = 64
)

// sharded runs every schedule of root's part Options.Shard, and reports
// whether it covered them all.
func (s *Search[C, K]) sharded(ctx context.Context, root task[C, K]) (bool, error) {
	s.mu.Lock()
	s.explored = nil
	s.mu.Unlock()
	sh := s.o.Shard
	if sh.Index < 0 || sh.Index >= sh.Count {
		return false, fmt.Errorf("%w: %s", ErrShard, sh)
	}
	units, depth, err := s.cut(ctx, root)
	if err != nil {
		return false, err
	}
	split := Split{Depth: depth}
	h := sha256.New()
	fmt.Fprintf(h, "depth %d\n", depth)
	var mine []dealt[C, K]
	covered := true
	for i, u := range units {
		var k int
		switch {
		case u.task != nil:
			k = split.Subtrees
			split.Subtrees++
			fmt.Fprintf(h, "subtree %v\n", u.path)
		default:
			k = split.Runs
			split.Runs++
			fmt.Fprintf(h, "run %v %v\n", u.diverged, u.path)
		}
		if k%sh.Count != sh.Index {
			continue
		}
		switch {
		case u.diverged:
			s.mu.Lock()
			s.diverged++
			s.mu.Unlock()
			covered = false
		case u.task != nil:
			mine = append(mine, dealt[C, K]{index: i, task: u.task})
			s.credit(u.credit)
		default:
			mine = append(mine, dealt[C, K]{index: i, run: u.run})
			s.credit(u.credit)
			s.record(u.run)
		}
	}
	split.Digest = hex.EncodeToString(h.Sum(nil))
	s.mu.Lock()
	s.split = &split
	s.mu.Unlock()
	if s.stop() {
		return false, nil
	}
	if s.parallelOK() {
		ok, err := s.parallel(ctx, func(_ context.Context, put func(task[C, K])) (bool, error) {
			for _, d := range mine {
				if d.task != nil {
					put(*d.task)
				}
			}
			return true, nil
		})
		return covered && ok, err
	}
	var rec *recorder[K]
	if covered && s.o.Cache && !s.o.DPOR {
		rec = newRecorder[K](len(units))
	}
	for _, d := range mine {
		rec.unit(d.index)
		if d.run != nil {
			rec.end(d.run.Complete)
			continue
		}
		w := &walk[C, K]{s: s, sys: s.systems[0], t: *d.task, splitAt: SplitDepth,
			covered: true, rec: rec}
		ok, err := w.search(ctx)
		if err != nil {
			return false, err
		}
		if s.stop() || ctx.Err() != nil {
			return false, nil
		}
		covered = covered && ok
	}
	if covered {
		e, err := rec.explored()
		if err != nil {
			return false, err
		}
		s.mu.Lock()
		s.explored = e
		s.mu.Unlock()
	}
	return covered, nil
}

// cut lists the parts of the tree below root at the shallowest depth, from
// SplitDepth on, with shardSubtrees subtrees per shard, or where the tree
// ends. It leaves in the state cache the states its runs reached.
func (s *Search[C, K]) cut(ctx context.Context, root task[C, K]) ([]unit[C, K], int, error) {
	for depth := SplitDepth; ; depth++ {
		units, err := s.parts(ctx, root, depth)
		if err != nil {
			return nil, 0, err
		}
		subtrees := 0
		for _, u := range units {
			if u.task != nil {
				subtrees++
			}
		}
		if subtrees == 0 || subtrees >= shardSubtrees*s.o.Shard.Count ||
			depth >= maxSplitDepth {
			return units, depth, nil
		}
	}
}

// parts runs the decisions of root down to depth, on the first system,
// with a fresh state cache, and lists the parts: the subtrees there, and
// the runs that ended above it, in the order a lone dfs meets them.
func (s *Search[C, K]) parts(
	ctx context.Context, root task[C, K], depth int,
) ([]unit[C, K], error) {
	s.cache = cache[K]{visited: map[Fingerprint][]*asleep[K]{}}
	var units []unit[C, K]
	w := &walk[C, K]{s: s, sys: s.systems[0], t: root, split: func(task[C, K]) {},
		splitAt: depth, units: &units, covered: true}
	if _, err := w.search(ctx); err != nil {
		return nil, err
	}
	return units, nil
}

// unit lists a run of parts (its walk's units) instead of counting it.
func (w *walk[C, K]) unit(r *Run[K], err error, run *walkRun[C, K]) error {
	u := unit[C, K]{credit: run.credit}
	switch {
	case errors.Is(err, ErrNotEnabled):
		u.diverged, u.path = true, r.Path
	case err != nil:
		return err
	case len(run.handed) > 0:
		t := run.handed[0]
		u.task, u.path = &t, t.prefix
	default:
		if r.Complete {
			u.credit.Add(u.credit, w.below())
		}
		u.run, u.path = r, r.Path
	}
	*w.units = append(*w.units, u)
	return nil
}

// credit counts weight w of the tree as covered.
func (s *Search[C, K]) credit(w *big.Rat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.covered.Add(&s.covered, w)
}
