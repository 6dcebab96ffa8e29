package search

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"slices"
)

// split is the indexes of the enabled choices that are not faults, and
// of those that are.
func split[C any, K comparable](sys System[C, K], en []C) (moves, faults []int) {
	for i, c := range en {
		if sys.Fault(c) {
			faults = append(faults, i)
		} else {
			moves = append(moves, i)
		}
	}
	return moves, faults
}

// Walk runs n random schedules from seed on the first system: at each
// decision a fault with probability 1/8 (when one is enabled), else one
// of the other choices, each uniformly. It stops early when the search
// has found what it was to stop at, or when ctx ends (then with ctx's
// error). A run whose path diverged is not counted.
func (s *Search[C, K]) Walk(ctx context.Context, seed uint64, n int) error {
	sys := s.systems[0]
	rng := mrand.New(mrand.NewPCG(seed, 0x5eed))
	for i := 0; i < n && !s.stop(); i++ {
		r, w, err := runAgain(ctx, sys, nil, func(d Decision[C]) (int, bool) {
			moves, faults := split(sys, d.Enabled)
			if len(faults) > 0 && (len(moves) == 0 || rng.IntN(8) == 0) {
				return faults[rng.IntN(len(faults))], true
			}
			return moves[rng.IntN(len(moves))], true
		})
		if err := s.walked1(r, w, err); err != nil {
			return err
		}
	}
	return nil
}

// walked1 counts a random run: its schedule, and its path's weight in the
// coverage the first time it runs.
func (s *Search[C, K]) walked1(r *Run[K], w *big.Rat, err error) error {
	if errors.Is(err, ErrNotEnabled) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.Complete {
		key := fmt.Sprint(r.Path)
		s.mu.Lock()
		if !s.walkSeen[key] {
			s.walkSeen[key] = true
			s.walked.Add(&s.walked, w)
		}
		s.mu.Unlock()
	}
	s.record(r)
	return nil
}

// PCT runs n schedules of probabilistic concurrency testing (Burckhardt et
// al., ASPLOS 2010) from seed on the first system: the owners of the
// choices (System.Owner) get distinct random priorities above depth-1, in
// the order they first appear, and the highest-priority owner that can
// move moves; at depth-1 random decisions out of bound (the length of a
// schedule, then the longest run so far), the owner about to move drops
// to a priority below all others (depth-1, then depth-2, ...). A fault
// strikes at one random decision: one of those enabled of the owner
// about to move. It stops as Walk does.
func (s *Search[C, K]) PCT(ctx context.Context, seed uint64, n, depth, bound int) error {
	sys := s.systems[0]
	rng := mrand.New(mrand.NewPCG(seed, 0x9c7))
	k := max(bound, 1)
	longest := 1
	for i := 0; i < n && !s.stop(); i++ {
		var order []string          // the owners not lowered, highest first
		lowered := map[string]int{} // the owners lowered, and their priority
		prio := func(o string) int {
			if p, ok := lowered[o]; ok {
				return p
			}
			j := slices.Index(order, o)
			if j < 0 {
				j = rng.IntN(len(order) + 1)
				order = slices.Insert(order, j, o)
			}
			return depth + len(order) - j
		}
		change := map[int]int{}
		for j := 1; j < depth; j++ {
			change[rng.IntN(k)] = depth - j
		}
		faultAt := rng.IntN(k)
		r, w, err := runAgain(ctx, sys, nil, func(d Decision[C]) (int, bool) {
			en := d.Enabled
			moves, faults := split(sys, en)
			if len(moves) == 0 {
				return faults[rng.IntN(len(faults))], true
			}
			for _, i := range moves {
				prio(sys.Owner(en[i])) // a newcomer gets its priority in order
			}
			best := func() int {
				b := moves[0]
				for _, i := range moves[1:] {
					if prio(sys.Owner(en[i])) > prio(sys.Owner(en[b])) {
						b = i
					}
				}
				return b
			}
			b := best()
			if faultAt >= 0 && d.Depth >= faultAt {
				var mine []int
				for _, i := range faults {
					if sys.Owner(en[i]) == sys.Owner(en[b]) {
						mine = append(mine, i)
					}
				}
				if len(mine) > 0 {
					faultAt = -1
					return mine[rng.IntN(len(mine))], true
				}
			}
			if p, ok := change[d.Depth]; ok {
				o := sys.Owner(en[b])
				order = slices.DeleteFunc(order, func(x string) bool { return x == o })
				lowered[o] = p
				b = best()
			}
			return b, true
		})
		if err == nil {
			longest = max(longest, len(r.Path))
			k = longest
		}
		if err := s.walked1(r, w, err); err != nil {
			return err
		}
	}
	return nil
}
