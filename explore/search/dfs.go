package search

import (
	"context"
	"errors"
	"math/big"
	"slices"
	"sync"
)

// SplitDepth is the depth, below a parallel search's root, where its
// subtrees are handed to the workers.
const SplitDepth = 4

// node is one decision of the depth-first search.
type node[C any] struct {
	enabled []C
	sleep   []C // explored in another order already
	done    []C // children explored
	chosen  C
	weight  *big.Rat // the share of the search tree below the decision
	// given is the children after chosen handed to other workers
	// (dfs's donate): they count as done once the next child is chosen,
	// not before, since chosen's own subtree must not have them asleep.
	given []C
}

// task is a subtree of the search: the schedules that start with prefix,
// whose first decision has sleep asleep already, and its weight.
type task[C any, K comparable] struct {
	prefix []K
	sleep  []C
	weight *big.Rat
}

// Exhaustive runs every schedule that starts with prefix, depth first,
// pruning with the sleep sets and the state cache as the options say, on
// every worker when there are several and the search is not told to stop
// (Stop, StopAtFirst). It returns when done, when it has found what it
// was to stop at, or when ctx ends (then with ctx's error); Result says
// what it found either way.
func (s *Search[C, K]) Exhaustive(ctx context.Context, prefix []K) error {
	s.mu.Lock()
	s.dfsRan = true
	s.mu.Unlock()
	root := task[C, K]{prefix: slices.Clone(prefix), weight: big.NewRat(1, 1)}
	var covered bool
	var err error
	if len(s.systems) > 1 && !s.o.StopAtFirst && len(s.o.Stop) == 0 {
		covered, err = s.parallel(ctx, root)
	} else {
		covered, err = s.dfs(ctx, s.systems[0], root, nil, nil)
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	s.mu.Lock()
	s.complete = covered && err == nil
	s.mu.Unlock()
	return err
}

// dfs runs every schedule of t on sys, depth first. It reports whether it
// covered them all. With split set, it does not descend below SplitDepth
// decisions: it hands each subtree there to split instead, as a task.
// With share set, whenever a worker waits for work it gives share the
// untried subtree nearest the root (donate), as a lone dfs would search
// it: the same sleep set, and the same schedules.
func (s *Search[C, K]) dfs(ctx context.Context, sys System[C, K], t task[C, K], split func(task[C, K]), share *pool[C, K]) (bool, error) {
	var stack []*node[C]
	contains := func(cs []C, a C) bool {
		k := sys.Key(a)
		return slices.ContainsFunc(cs, func(c C) bool { return sys.Key(c) == k })
	}
	next := func(n *node[C]) (C, bool) {
		for _, c := range n.enabled {
			if !contains(n.sleep, c) && !contains(n.done, c) && !contains(n.given, c) {
				return c, true
			}
		}
		var zero C
		return zero, false
	}
	// below is the weight of the position after the last decision on the
	// stack.
	below := func() *big.Rat {
		if len(stack) == 0 {
			return t.weight
		}
		n := stack[len(stack)-1]
		return new(big.Rat).Mul(n.weight, big.NewRat(1, int64(len(n.enabled))))
	}
	// donate hands share the first untried child of the decision nearest
	// the root that has one, and counts it given (skipped here). Its
	// sleep set is the one dfs alone gives it when its turn comes: what
	// the decision has asleep or done by then (every child before it,
	// the one being searched and those given too) that commutes with it.
	donate := func() bool {
		for k, n := range stack {
			for _, c := range n.enabled {
				if contains(n.sleep, c) || contains(n.done, c) || contains(n.given, c) || sys.Key(c) == sys.Key(n.chosen) {
					continue
				}
				path := slices.Clone(t.prefix)
				for _, m := range stack[:k] {
					path = append(path, sys.Key(m.chosen))
				}
				path = append(path, sys.Key(c))
				var sleep []C
				if s.o.Sleep {
					for _, b := range append(append(append(slices.Clone(n.sleep), n.done...), n.chosen), n.given...) {
						if sys.Independent(c, b) {
							sleep = append(sleep, b)
						}
					}
				}
				n.given = append(n.given, c)
				share.put(task[C, K]{prefix: path, sleep: sleep,
					weight: new(big.Rat).Mul(n.weight, big.NewRat(1, int64(len(n.enabled))))})
				return true
			}
		}
		return false
	}
	covered := true
	void := 0 // runs in a row that were void
	// visited holds, for each state reached, the sleep sets it was
	// reached with: a state reached again with a sleep set that holds one
	// of them has nothing left to explore.
	visited := map[Fingerprint][][]C{}
	subset := func(a, b []C) bool {
		for _, x := range a {
			if !contains(b, x) {
				return false
			}
		}
		return true
	}
	for {
		plan := slices.Clone(t.prefix)
		for _, n := range stack {
			plan = append(plan, sys.Key(n.chosen))
		}
		var handed []task[C, K]
		var seen []Fingerprint // states this run added to visited
		depth0 := len(stack)
		credit := new(big.Rat) // the weight this run covers
		r, _, err := runOnce(ctx, sys, plan, func(d Decision[C]) (int, bool) {
			n := &node[C]{enabled: d.Enabled, weight: below()}
			switch {
			case !s.o.Sleep:
			case len(stack) == 0:
				n.sleep = t.sleep
			default:
				p := stack[len(stack)-1]
				for _, b := range append(slices.Clone(p.sleep), p.done...) {
					if sys.Independent(p.chosen, b) {
						n.sleep = append(n.sleep, b)
					}
				}
			}
			if s.o.Cache && d.State != nil {
				if key, ok := d.State(); ok {
					for _, z := range visited[key] {
						if subset(z, n.sleep) {
							credit.Add(credit, n.weight)
							return 0, false // explored from this state already
						}
					}
					visited[key] = append(visited[key], slices.Clone(n.sleep))
					seen = append(seen, key)
				}
			}
			if split != nil && len(stack) == SplitDepth {
				path := slices.Clone(t.prefix)
				for _, m := range stack {
					path = append(path, sys.Key(m.chosen))
				}
				handed = append(handed, task[C, K]{prefix: path, sleep: n.sleep, weight: n.weight})
				return 0, false
			}
			asleep := 0
			for _, c := range n.enabled {
				if contains(n.sleep, c) {
					asleep++
				}
			}
			if asleep > 0 {
				credit.Add(credit, new(big.Rat).Mul(n.weight, big.NewRat(int64(asleep), int64(len(n.enabled)))))
			}
			c, ok := next(n)
			if !ok {
				return 0, false // every continuation covered in another order
			}
			n.chosen = c
			stack = append(stack, n)
			k := sys.Key(c)
			return slices.IndexFunc(d.Enabled, func(x C) bool { return sys.Key(x) == k }), true
		})
		if errors.Is(err, ErrRetry) {
			// Run it again, as if this run had not happened.
			stack = stack[:depth0]
			for _, key := range seen {
				visited[key] = visited[key][:len(visited[key])-1]
			}
			if void++; void >= MaxRetries {
				return false, errors.Join(ErrRetries, err)
			}
			continue
		}
		void = 0
		for _, h := range handed {
			split(h)
		}
		switch {
		case errors.Is(err, ErrNotEnabled):
			// The replay of a path went another way than its first run:
			// the system did something its choices do not order. The
			// subtree is skipped, and the search is not exhaustive.
			s.mu.Lock()
			s.diverged++
			s.mu.Unlock()
			covered = false
		case err != nil:
			return false, err
		case handed == nil:
			if r.Complete {
				credit.Add(credit, below())
			}
			s.mu.Lock()
			s.covered.Add(&s.covered, credit)
			s.mu.Unlock()
			s.record(r)
		}
		if s.stop() {
			return false, nil
		}
		// Backtrack to the deepest decision with an alternative left.
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			n.done = append(append(n.done, n.chosen), n.given...)
			n.given = nil
			if c, ok := next(n); ok {
				n.chosen = c
				break
			}
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return covered, nil
		}
		for share != nil && share.hungry() && donate() {
		}
	}
}

// parallel runs every schedule of root, as dfs does, on every worker: the
// first goes through the decisions down to SplitDepth, and every worker,
// the first too once done with that, searches the subtrees found there.
// A worker that finds none left waiting gets one from a worker still
// searching (dfs's share): a few subtrees can hold most of the schedules
// (the fenced market's two largest of 64 held 70% of the time), and
// they would keep one worker busy while the others idle. Each subtree
// starts with the sleep set dfs alone would give it, so the schedules run
// are dfs's (without the cache: with it, each subtree has a cache of its
// own).
func (s *Search[C, K]) parallel(ctx context.Context, root task[C, K]) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		covered  = true
	)
	end := func(ok bool, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
		covered = covered && ok
	}
	tasks := newPool[C, K](len(s.systems))
	work := func(sys System[C, K]) {
		for {
			t, ok := tasks.get()
			if !ok {
				return
			}
			if ctx.Err() != nil {
				end(false, nil)
				continue // drain: the search failed or was stopped
			}
			end(s.dfs(ctx, sys, t, nil, tasks))
		}
	}
	var wg sync.WaitGroup
	for _, sys := range s.systems[1:] {
		wg.Go(func() { work(sys) })
	}
	end(s.dfs(ctx, s.systems[0], root, tasks.put, nil))
	work(s.systems[0])
	wg.Wait()
	return covered && firstErr == nil, firstErr
}

// pool is the subtrees of a parallel search waiting for a worker, and the
// workers waiting for a subtree.
type pool[C any, K comparable] struct {
	mu      sync.Mutex
	cond    sync.Cond
	queue   []task[C, K]
	workers int // the workers that take from the pool
	idle    int // those waiting in get
	done    bool
}

func newPool[C any, K comparable](workers int) *pool[C, K] {
	p := &pool[C, K]{workers: workers}
	p.cond.L = &p.mu
	return p
}

// put adds a subtree.
func (p *pool[C, K]) put(t task[C, K]) {
	p.mu.Lock()
	p.queue = append(p.queue, t)
	p.mu.Unlock()
	p.cond.Signal()
}

// get waits for a subtree; ok is false once there is none and none can
// come: every worker is waiting.
func (p *pool[C, K]) get() (t task[C, K], ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle++
	for len(p.queue) == 0 && !p.done {
		if p.idle == p.workers {
			p.done = true
			p.cond.Broadcast()
			break
		}
		p.cond.Wait()
	}
	p.idle--
	if len(p.queue) == 0 {
		return t, false
	}
	t = p.queue[0]
	p.queue = p.queue[1:]
	return t, true
}

// hungry reports whether a worker waits with nothing to take.
func (p *pool[C, K]) hungry() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle > len(p.queue)
}
