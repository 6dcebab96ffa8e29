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
	// With dynamic partial-order reduction (Options.DPOR), todo is the
	// children to explore (its backtrack set), unless full: all of them.
	todo    []C
	threads []string // the threads whose choices todo holds, every one
	full    bool
}

// task is a subtree of the search: the schedules that start with prefix,
// whose first decision has sleep asleep already, and its weight.
type task[C any, K comparable] struct {
	prefix []K
	sleep  []C
	weight *big.Rat
	// claimed is set when the worker that found the subtree put its
	// first state in the cache already, for this task: its first
	// decision must not find itself there.
	claimed bool
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
	// A cache of this search's own: the states an earlier call explored
	// were explored from its prefix, not this one's.
	s.cache = cache[K]{visited: map[Fingerprint][]*asleep[K]{}}
	root := task[C, K]{prefix: slices.Clone(prefix), weight: big.NewRat(1, 1)}
	var covered bool
	var err error
	switch {
	case s.o.Shard.Count > 1:
		covered, err = s.sharded(ctx, root)
	case s.parallelOK():
		first := func(ctx context.Context, put func(task[C, K])) (bool, error) {
			return s.dfs(ctx, s.systems[0], root, put, nil)
		}
		covered, err = s.parallel(ctx, first)
	default:
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

// parallelOK tells whether the exhaustive search runs on every worker:
// when there are several, and the search is not told to stop.
func (s *Search[C, K]) parallelOK() bool {
	return len(s.systems) > 1 && !s.o.StopAtFirst && len(s.o.Stop) == 0
}

// dfs runs every schedule of t on sys, depth first. It reports whether it
// covered them all. With split set, it does not descend below SplitDepth
// decisions: it hands each subtree there to split instead, as a task.
// With share set, whenever a worker waits for work it gives share the
// untried subtree nearest the root (donate), as a lone dfs would search
// it: the same sleep set, and the same schedules.
func (s *Search[C, K]) dfs(
	ctx context.Context,
	sys System[C, K],
	t task[C, K],
	split func(task[C, K]),
	share *pool[C, K],
) (bool, error) {
	w := &walk[C, K]{s: s, sys: sys, t: t, split: split, splitAt: SplitDepth, share: share,
		covered: true}
	return w.search(ctx)
}

// search runs the walk's schedules, one after the other, as dfs says.
func (w *walk[C, K]) search(ctx context.Context) (bool, error) {
	s, sys := w.s, w.sys
	void := 0 // runs in a row that were void
	for {
		run := &walkRun[C, K]{depth0: len(w.stack), credit: new(big.Rat)}
		r, _, err := runOnce(
			ctx,
			sys,
			w.plan(),
			func(d Decision[C]) (int, bool) { return w.decide(d, run) },
		)
		if errors.Is(err, ErrRetry) {
			// Run it again, as if this run had not happened.
			w.undo(run)
			if void++; void >= MaxRetries {
				return false, errors.Join(ErrRetries, err)
			}
			continue
		}
		void = 0
		if err := w.settle(r, err, run); err != nil {
			return false, err
		}
		if s.o.DPOR && err == nil {
			w.races()
		}
		if s.stop() {
			return false, nil
		}
		if !w.backtrack() {
			return w.covered, nil
		}
		for w.share != nil && w.share.hungry() && w.donate() {
		}
	}
}

// walk is the state of one depth-first search (dfs): the decisions of the
// schedule being run, and the states reached so far.
type walk[C any, K comparable] struct {
	s     *Search[C, K]
	sys   System[C, K]
	t     task[C, K]
	split func(task[C, K])
	// splitAt is the depth below the task's root where split takes the
	// subtrees.
	splitAt int
	share   *pool[C, K]
	// units, when set, takes each run instead of the search: the walk
	// only lists the parts of a sharded search (shard.go).
	units *[]unit[C, K]
	// rec, when set, records what the walk explores (a shard's, graph.go).
	rec *recorder[K]

	stack   []*node[C]
	covered bool // no subtree was skipped
}

// walkRun is what one run of a schedule in a walk added.
type walkRun[C any, K comparable] struct {
	handed []task[C, K] // the subtrees handed to split
	seen   []seen[K]    // the cache entries this run added
	depth0 int          // the stack's depth before the run
	credit *big.Rat     // the weight this run covers
}

// seen is a cache entry a run added.
type seen[K comparable] struct {
	fp Fingerprint
	e  *asleep[K]
}

// contains tells whether cs holds a choice with a's key.
func (w *walk[C, K]) contains(cs []C, a C) bool {
	k := w.sys.Key(a)
	return slices.ContainsFunc(cs, func(c C) bool { return w.sys.Key(c) == k })
}

// next is n's first child neither asleep, done nor given away (with
// DPOR: among those to explore).
func (w *walk[C, K]) next(n *node[C]) (C, bool) {
	for _, c := range n.enabled {
		if w.open(n, c) {
			return c, true
		}
	}
	var zero C
	return zero, false
}

// open tells whether child c of n is still to explore: not asleep, done
// nor given away, and, with DPOR, in n's backtrack set.
func (w *walk[C, K]) open(n *node[C], c C) bool {
	if w.contains(n.sleep, c) || w.contains(n.done, c) || w.contains(n.given, c) {
		return false
	}
	return !w.s.o.DPOR || n.full || w.contains(n.todo, c)
}

// below is the weight of the position after the last decision on the
// stack.
func (w *walk[C, K]) below() *big.Rat {
	if len(w.stack) == 0 {
		return w.t.weight
	}
	n := w.stack[len(w.stack)-1]
	return new(big.Rat).Mul(n.weight, big.NewRat(1, int64(len(n.enabled))))
}

// path is the task's prefix followed by the choices of the first depth
// decisions on the stack.
func (w *walk[C, K]) path(depth int) []K {
	path := slices.Clone(w.t.prefix)
	for _, m := range w.stack[:depth] {
		path = append(path, w.sys.Key(m.chosen))
	}
	return path
}

// plan is the schedule to run next: the decisions on the stack.
func (w *walk[C, K]) plan() []K { return w.path(len(w.stack)) }

// donate hands share the first untried child of the decision nearest
// the root that has one, and counts it given (skipped here). Its
// sleep set is the one dfs alone gives it when its turn comes: what
// the decision has asleep or done by then (every child before it,
// the one being searched and those given too) that commutes with it.
func (w *walk[C, K]) donate() bool {
	sys := w.sys
	for k, n := range w.stack {
		for _, c := range n.enabled {
			if !w.open(n, c) || sys.Key(c) == sys.Key(n.chosen) {
				continue
			}
			// The subtree's races cannot add to the backtrack sets of
			// this walk: the decisions down to n explore every child.
			w.expand(k)
			path := append(w.path(k), sys.Key(c))
			var sleep []C
			if w.s.o.Sleep {
				taken := append(append(slices.Clone(n.sleep), n.done...), n.chosen)
				for _, b := range append(taken, n.given...) {
					if sys.Independent(c, b) {
						sleep = append(sleep, b)
					}
				}
			}
			n.given = append(n.given, c)
			w.share.put(task[C, K]{prefix: path, sleep: sleep,
				weight: new(big.Rat).Mul(n.weight, big.NewRat(1, int64(len(n.enabled))))})
			return true
		}
	}
	return false
}

// decide takes decision d of the run: it returns the index of the child
// to take, or false to end the run there (a state explored already, a
// subtree handed to split, every child asleep).
func (w *walk[C, K]) decide(d Decision[C], run *walkRun[C, K]) (int, bool) {
	n := &node[C]{enabled: d.Enabled, weight: w.below(), sleep: w.sleepSet()}
	cached := false
	if w.s.o.Cache && !w.s.o.DPOR && d.State != nil && !(w.t.claimed && len(w.stack) == 0) {
		if fp, ok := d.State(); ok {
			keys := make([]K, len(n.sleep))
			for i, c := range n.sleep {
				if d.Rename != nil {
					c = d.Rename(c)
				}
				keys[i] = w.sys.Key(c)
			}
			e, hit := w.s.cache.visit(fp, keys)
			w.rec.state(fp, keys)
			if hit {
				w.rec.cut()
				run.credit.Add(run.credit, n.weight)
				return 0, false // explored from this state already
			}
			run.seen = append(run.seen, seen[K]{fp, e})
			cached = true
		}
	}
	if w.split != nil && len(w.stack) == w.splitAt {
		run.handed = append(
			run.handed,
			task[C, K]{prefix: w.plan(), sleep: n.sleep, weight: n.weight, claimed: cached},
		)
		return 0, false
	}
	asleep := 0
	for _, c := range n.enabled {
		if w.contains(n.sleep, c) {
			asleep++
		}
	}
	w.rec.decision(len(n.enabled) - asleep)
	if asleep > 0 {
		run.credit.Add(
			run.credit,
			new(big.Rat).Mul(n.weight, big.NewRat(int64(asleep), int64(len(n.enabled)))),
		)
	}
	if w.s.o.DPOR {
		// The decisions above the split explore every child (their
		// subtrees' races are found by other workers); below, the first
		// child awake, its thread's other moves, and every fault, which
		// can disable another (a bound on faults), so that no race
		// with one goes unseen.
		n.full = w.split != nil
		for _, c := range n.enabled {
			if !w.contains(n.sleep, c) {
				w.addThread(n, w.sys.Owner(c))
				break
			}
		}
		for _, c := range n.enabled {
			if w.sys.Fault(c) && !w.contains(n.todo, c) {
				n.todo = append(n.todo, c)
			}
		}
	}
	c, ok := w.next(n)
	if !ok {
		return 0, false // every continuation covered in another order
	}
	n.chosen = c
	w.stack = append(w.stack, n)
	k := w.sys.Key(c)
	return slices.IndexFunc(d.Enabled, func(x C) bool { return w.sys.Key(x) == k }), true
}

// sleepSet is the sleep set of the next decision: the task's at the root,
// below it what the decision before has asleep or done that commutes with
// its choice (none without sleep sets).
func (w *walk[C, K]) sleepSet() []C {
	switch {
	case !w.s.o.Sleep:
		return nil
	case len(w.stack) == 0:
		return w.t.sleep
	}
	var sleep []C
	p := w.stack[len(w.stack)-1]
	for _, b := range append(slices.Clone(p.sleep), p.done...) {
		if w.sys.Independent(p.chosen, b) {
			sleep = append(sleep, b)
		}
	}
	return sleep
}

// undo forgets a run that is to be run again: its decisions and the states
// it visited.
func (w *walk[C, K]) undo(run *walkRun[C, K]) {
	w.stack = w.stack[:run.depth0]
	w.rec.undo()
	for _, z := range run.seen {
		w.s.cache.forget(z.fp, z.e)
	}
}

// settle takes stock of a run that ended with err: it hands its subtrees
// to split, and counts what it covered and records it, or notes that it
// diverged (then the search is not exhaustive). It returns err when the
// search cannot go on.
func (w *walk[C, K]) settle(r *Run[K], err error, run *walkRun[C, K]) error {
	s := w.s
	if w.units != nil {
		return w.unit(r, err, run)
	}
	w.rec.settled(r.Complete, err)
	for _, h := range run.handed {
		w.split(h)
	}
	switch {
	case errors.Is(err, ErrNotEnabled):
		// The replay of a path went another way than its first run:
		// the system did something its choices do not order. The
		// subtree is skipped, and the search is not exhaustive.
		s.mu.Lock()
		s.diverged++
		s.mu.Unlock()
		w.covered = false
	case err != nil:
		return err
	case run.handed == nil:
		if r.Complete {
			run.credit.Add(run.credit, w.below())
		}
		s.mu.Lock()
		s.covered.Add(&s.covered, run.credit)
		s.mu.Unlock()
		s.record(r)
	}
	return nil
}

// backtrack moves to the deepest decision with an alternative left and
// chooses it. It returns false when there is none: the walk is over.
func (w *walk[C, K]) backtrack() bool {
	for len(w.stack) > 0 {
		n := w.stack[len(w.stack)-1]
		n.done = append(append(n.done, n.chosen), n.given...)
		n.given = nil
		if c, ok := w.next(n); ok {
			n.chosen = c
			return true
		}
		if w.s.o.DPOR {
			// The children DPOR left out are covered by those explored.
			left := 0
			for _, c := range n.enabled {
				if !w.contains(n.sleep, c) && !w.contains(n.done, c) {
					left++
				}
			}
			if left > 0 {
				w.s.mu.Lock()
				w.s.covered.Add(
					&w.s.covered,
					new(big.Rat).Mul(n.weight, big.NewRat(int64(left), int64(len(n.enabled)))),
				)
				w.s.mu.Unlock()
			}
		}
		w.stack = w.stack[:len(w.stack)-1]
	}
	return false
}

// addThread adds to n's backtrack set every child that moves thread t.
func (w *walk[C, K]) addThread(n *node[C], t string) {
	n.threads = append(n.threads, t)
	for _, c := range n.enabled {
		if w.sys.Owner(c) == t && !w.contains(n.todo, c) {
			n.todo = append(n.todo, c)
		}
	}
}

// expand makes the decisions down to depth k on the stack explore every
// child.
func (w *walk[C, K]) expand(k int) {
	for _, n := range w.stack[:k+1] {
		n.full = true
	}
}

// races is the dynamic partial-order reduction's step after a run
// (source sets, Abdulla et al. 2014, with the threads of System.Owner):
// for each pair of choices i < j of the run that race (they do not
// commute, move different threads, and no choice between is ordered
// after i and before j), the decision of i must explore a thread that
// can start the run with j moved before i: the choices after i not
// ordered after it, then j. Unless its backtrack set has one of those
// threads already, it gains one. Races with the task's prefix are not
// needed: its decisions explore every child (the split, donate).
func (w *walk[C, K]) races() {
	n := len(w.stack)
	words := (n + 63) / 64
	has := func(set []uint64, i int) bool { return set[i/64]&(1<<(i%64)) != 0 }
	// before[j] is the set of choices ordered before choice j: by their
	// thread, or by a chain of choices that do not commute.
	before := make([][]uint64, n)
	owner := make([]string, n)
	for j := range n {
		owner[j] = w.sys.Owner(w.stack[j].chosen)
		before[j] = make([]uint64, words)
		for i := j - 1; i >= 0; i-- {
			if has(before[j], i) || !w.dependent(i, j, owner) {
				continue
			}
			before[j][i/64] |= 1 << (i % 64)
			for x := range words {
				before[j][x] |= before[i][x]
			}
		}
	}
	for j := range n {
		for i := j - 1; i >= 0; i-- {
			if owner[i] == owner[j] || !w.dependent(i, j, owner) {
				continue
			}
			m := w.stack[i]
			if m.full {
				continue
			}
			// v: the choices after i not ordered after it, then j.
			var v []int
			race := true
			for k := i + 1; k < j; k++ {
				if !has(before[k], i) {
					v = append(v, k)
				} else if has(before[j], k) {
					race = false // i is before j through k
					break
				}
			}
			if !race {
				continue
			}
			v = append(v, j)
			// The threads that can start v: those of its choices that
			// nothing in v is ordered before.
			var first []string
			for x, k := range v {
				if !slices.ContainsFunc(v[:x], func(y int) bool { return has(before[k], y) }) {
					first = append(first, owner[k])
				}
			}
			if slices.ContainsFunc(
				m.threads,
				func(t string) bool { return slices.Contains(first, t) },
			) {
				continue
			}
			if t, ok := w.enabledThread(m, first); ok {
				w.addThread(m, t)
			} else {
				m.full = true
			}
		}
	}
}

// dependent tells whether choices i and j of the stack are ordered: one
// thread's, or not commuting.
func (w *walk[C, K]) dependent(i, j int, owner []string) bool {
	return owner[i] == owner[j] || !w.sys.Independent(w.stack[i].chosen, w.stack[j].chosen)
}

// enabledThread is the first of threads with a choice enabled at n.
func (w *walk[C, K]) enabledThread(n *node[C], threads []string) (string, bool) {
	for _, t := range threads {
		if slices.ContainsFunc(n.enabled, func(c C) bool { return w.sys.Owner(c) == t }) {
			return t, true
		}
	}
	return "", false
}

// parallel runs every schedule of root, as dfs does, on every worker: the
// first goes through the decisions down to SplitDepth, and every worker,
// the first too once done with that, searches the subtrees found there.
// A worker that finds none left waiting gets one from a worker still
// searching (dfs's share): a few subtrees can hold most of the schedules
// (the fenced market's two largest of 64 held 70% of the time), and
// they would keep one worker busy while the others idle. Each subtree
// starts with the sleep set dfs alone would give it, so the schedules run
// are dfs's (without the cache: with it, the workers share one, and which
// states a worker finds there depends on where the others have got).
//
// first hands the subtrees to the workers: it is the first worker's
// search down to SplitDepth, or the subtrees of a shard (shard.go).
func (s *Search[C, K]) parallel(
	ctx context.Context,
	first func(ctx context.Context, put func(task[C, K])) (bool, error),
) (bool, error) {
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
	end(first(ctx, tasks.put))
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
