package explore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/timeline"
)

// Explorer runs a target's clients under the scheduler against one Redis.
// Each client has a go-redis client of its own (RESP2, no identity
// commands, no retries), carrying the hook that holds its commands.
type Explorer struct {
	rdb     *redis.Client // the scheduler's own: resets, clock ticks, checks
	clients []*redis.Client
	target  *Target
	model   Model
	ns      string
	epoch   time.Time
	resetAt int64 // the server's time of the last reset, µs
	// nodeResetAt is, for a target of several nodes, each node's server
	// time at the last reset, µs.
	nodeResetAt []int64
	// factor is the dilation of time: Dilation (tests of the reruns set
	// 1, where a stall of the machine runs a lease down as much).
	factor int64
	reruns atomic.Int64
	// stall, when set (by tests), is called after each advance of the
	// clock with the shortest lease left on the virtual clock (0 for
	// none), before any client goes on: it may stall, as a busy machine
	// does.
	stall func(left time.Duration)
	// state is the fingerprint of the schedule being run, as it stands
	// when its chooser is asked (world.fingerprint).
	state func() ([32]byte, bool)
	// For a parallel search: the Redis and the target the explorer was
	// made from, and the explorers of the other workers (lanes), made on
	// first use and closed by Close.
	base  *redis.Client
	orig  *Target
	lanes []*Explorer
}

// New returns an explorer of t under model m on the Redis base talks to.
// The target's keys live under a fresh namespace, deleted by Close.
func New(ctx context.Context, base *redis.Client, t *Target, m Model) (*Explorer, error) {
	if m.Clients == 0 {
		m.Clients = max(t.Clients, 2)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 5)
	rand.Read(b)
	m = m.Resolve()
	tc := *t
	tc.ns = "{explore-" + hex.EncodeToString(b) + "}:"
	if err := tc.bindCode(); err != nil {
		return nil, err
	}
	e := &Explorer{target: &tc, model: m, ns: tc.ns, base: base, orig: t, factor: Dilation}
	opts := *base.Options()
	opts.Protocol = 2
	opts.DisableIdentity = true
	opts.MaxRetries = -1
	opts.MaintNotificationsConfig = nil
	opts.PushNotificationProcessor = nil
	ctl := opts
	e.rdb = redis.NewClient(&ctl)
	for range m.Clients {
		o := opts
		o.PoolSize = 4
		c := redis.NewClient(&o)
		c.AddHook(hook{})
		e.clients = append(e.clients, c)
	}
	if err := e.openNodes(opts); err != nil {
		e.Close()
		return nil, err
	}
	if tc.check != nil {
		if err := tc.check(ctx, e.rdb, tc.ns); err != nil {
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
	err := resetScript.Run(context.Background(), e.rdb, nil, e.ns+"*").Err()
	if nerr := e.closeNodes(); err == nil {
		err = nerr
	}
	for _, c := range e.clients {
		c.Close()
	}
	e.rdb.Close()
	return err
}

// Target is the explored target.
func (e *Explorer) Target() *Target { return e.target }

// Model is the explored model.
func (e *Explorer) Model() Model { return e.model }

// Resource describes the state of the resource a target with a workload
// of its own protects (the market's listing and buyers); "" for the
// generic workload, whose resource is the key Prefix()+"counter".
func (e *Explorer) Resource(ctx context.Context) (string, error) {
	if e.target.resource == nil {
		return "", nil
	}
	return e.target.resource(ctx, e.rdb, e.ns)
}

// Prefix is the namespace of the target's keys.
func (e *Explorer) Prefix() string { return e.ns }

// reset deletes the namespace's keys, so that each schedule starts from
// the same empty state, and starts the virtual clock afresh.
func (e *Explorer) reset(ctx context.Context) error {
	e.epoch = time.Now().Truncate(time.Millisecond)
	at, err := resetScript.Run(ctx, e.rdb, nil, e.ns+"*").Int64()
	if err != nil {
		return fmt.Errorf("explore: resetting the namespace: %w", err)
	}
	e.resetAt = at
	if err := e.resetNodes(ctx); err != nil {
		return fmt.Errorf("explore: resetting the namespace: %w", err)
	}
	if e.target.setup != nil {
		if err := e.target.setup(ctx, e.rdb, e.ns); err != nil {
			return fmt.Errorf("explore: setting up the target: %w", err)
		}
	}
	return nil
}

// Options configures a search.
type Options struct {
	// Mode is "exhaustive" (depth-first over every schedule within the
	// model's bounds), "random" (Schedules random walks from Seed) or
	// "pct" (Schedules runs of probabilistic concurrency testing: random
	// priorities, Depth-1 changes of priority, from Seed).
	Mode string
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
	// without the state cache the same schedules are run, with it each
	// worker's subtrees have a cache of their own, so the counts differ.
	Workers int

	// Budget, when above 0, is how long the search may run: then it
	// stops, as when its context ends, and the result holds what it found
	// so far (Result.Stopped says why), shortened and replayed within a
	// few seconds of their own.
	Budget time.Duration

	// Model is the bounds of a search made by Check (nil: DefaultModel,
	// with the target's clients); an Explorer's are New's.
	Model *Model

	prefix []Action // every schedule starts with these (FindFrom)
}

// Progress is how far a search has got.
type Progress struct {
	Schedules int
	Elapsed   time.Duration
	Found     []string
}

// Result is what a search found.
type Result struct {
	Target string `json:"target"`
	About  string `json:"about"`
	// Model is the bounds searched.
	Model Model `json:"model"`
	// Checked is the properties checked.
	Checked []string `json:"checked"`
	Mode    string   `json:"mode"`
	Seed    uint64   `json:"seed,omitempty"`
	// Schedules is the number of complete schedules run; Pruned the
	// number cut short because every continuation had been covered
	// already: in another order (the sleep sets) or from the same state
	// (the state cache).
	Schedules int `json:"schedules"`
	Pruned    int `json:"pruned"`
	// Diverged is the number of replays that did not follow their
	// prefix (the code did something the scheduler does not order); the
	// search is exhaustive only when it is 0.
	Diverged int `json:"diverged"`
	// Reruns is the number of runs of a schedule that were unsteady (a
	// stall longer than a lease's margin: the lease ran out on the
	// server's real time) and were run again; they count nowhere else.
	Reruns int `json:"reruns"`
	// Exhaustive is true when every schedule within the bounds was
	// covered.
	Exhaustive bool `json:"exhaustive"`
	// Stopped says why the search stopped before it was through:
	// StoppedBudget, StoppedInterrupted, or "" when it ended by itself
	// (through, or at a violation it was told to stop at).
	Stopped string        `json:"stopped"`
	Elapsed time.Duration `json:"-"`
	// Violations holds the first violation found of each property, with
	// the shortest schedule found that breaks it, replayed to the same
	// violation on a fresh redis-server (Found.Reproduced).
	Violations []Found `json:"violations"`
	// Unsteady holds the violations found whose schedule did not break
	// the property again when replayed on a fresh server, twice: the
	// search saw something its replays do not (the machine's timing, or
	// code that does something the scheduler does not order). They are
	// not violations.
	Unsteady []Found `json:"unsteady"`
}

// Found is a violated property and its counterexample.
type Found struct {
	Violation
	// Actions is the schedule to replay (Explorer.Replay).
	Actions []Action `json:"actions"`
	// Steps is the schedule as it ran, up to the violation.
	Steps []Step `json:"steps"`
	// Reproduced is true when Actions, replayed on a fresh redis-server
	// (Reproduce), broke the same property; Server is that server's
	// version (empty when none could be started: the replay then ran in
	// a fresh namespace of the explorer's server), and ReplayNote says
	// why it did not break it.
	Reproduced bool   `json:"reproduced"`
	Server     string `json:"redis_server,omitempty"`
	ReplayNote string `json:"replay_note,omitempty"`
	// Replay is the replay's timeline, for the renderers.
	Replay timeline.Timeline `json:"-"`
}

// Explore searches the target's schedules within the model's bounds.
func (e *Explorer) Explore(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	ctx, stopSearch := searchContext(ctx, o.Budget)
	defer stopSearch()
	check := o.Check
	if check == nil {
		check = e.target.Checks
	}
	res := &Result{Target: e.target.Name, About: e.target.About, Model: e.model, Mode: o.Mode, Checked: check}
	reruns := func() (n int64) {
		for _, x := range append([]*Explorer{e}, e.lanes...) {
			n += x.reruns.Load()
		}
		return n
	}
	reruns0 := reruns()
	defer func() { res.Reruns = int(reruns() - reruns0) }()
	found := map[string]*Found{}
	last := time.Now()
	var mu sync.Mutex // record and stopNow run on every worker
	record := func(s *schedule) {
		mu.Lock()
		defer mu.Unlock()
		if s.complete {
			res.Schedules++
		} else {
			res.Pruned++
		}
		for _, v := range s.violations {
			if !slices.Contains(check, v.Property) {
				continue
			}
			cost := v.Step + 1
			f := found[v.Property]
			if f == nil || cost < f.Step+1 || cost == f.Step+1 && compareActions(s.actions[:cost], f.Actions) < 0 {
				found[v.Property] = &Found{Violation: v, Actions: slices.Clone(s.actions[:cost]), Steps: slices.Clone(s.steps[:cost])}
			}
		}
		if o.Progress != nil && time.Since(last) > 5*time.Second {
			last = time.Now()
			o.Progress(Progress{Schedules: res.Schedules, Elapsed: time.Since(start), Found: keys(found)})
		}
	}
	stopNow := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if o.StopAtFirst && len(found) > 0 {
			return true
		}
		if len(o.Stop) == 0 {
			return false
		}
		for _, p := range o.Stop {
			if found[p] == nil {
				return false
			}
		}
		return true
	}
	diverged := func() {
		mu.Lock()
		res.Diverged++
		mu.Unlock()
	}
	var err error
	red := reduction{sleep: !o.NoReduction, cache: !o.NoReduction && !o.NoStateCache}
	switch o.Mode {
	case "random", "pct":
		res.Seed = o.Seed
		n := o.Schedules
		if n <= 0 {
			n = 1000
		}
		if o.Mode == "pct" {
			d := o.Depth
			if d <= 0 {
				d = 3
			}
			err = e.pct(ctx, o.Seed, n, d, record, stopNow)
		} else {
			err = e.walk(ctx, o.Seed, n, record, stopNow)
		}
	default:
		res.Mode = "exhaustive"
		if (o.StopAtFirst || len(o.Stop) > 0) && o.prefix == nil {
			// Looking for a counterexample, not a proof: try random
			// schedules first, then every schedule.
			if err = e.walk(ctx, 1, probeSchedules, record, stopNow); err != nil || stopNow() {
				break
			}
		}
		if o.Workers == 0 {
			o.Workers = runtime.GOMAXPROCS(0)
		}
		if o.Workers > 1 && !o.StopAtFirst && len(o.Stop) == 0 && o.prefix == nil {
			res.Exhaustive, err = e.parallel(ctx, o.Workers, red, record, stopNow, diverged)
		} else {
			res.Exhaustive, err = e.dfs(ctx, task{prefix: o.prefix}, red, record, stopNow, diverged, nil, nil)
		}
	}
	var fs []Found
	for _, p := range Properties {
		if f := found[p]; f != nil {
			fs = append(fs, *f)
		}
	}
	shrink := e.shrink
	if o.NoShrink {
		shrink = nil
	}
	return e.conclude(ctx, res, fs, err, shrink, start)
}

// probeSchedules is how many random schedules a search for a
// counterexample tries before it goes through every schedule.
const probeSchedules = 300

// walk runs n random schedules from seed: at each step a fault with
// probability 1/8 (when one may strike), else a command or a tick, each
// uniformly.
func (e *Explorer) walk(ctx context.Context, seed uint64, n int, record func(*schedule), stop func() bool) error {
	rng := mrand.New(mrand.NewPCG(seed, 0x5eed))
	for i := 0; i < n && !stop(); i++ {
		s, err := e.runAgain(ctx, func(_ int, en []choice) (int, bool) {
			moves, faults := split(en)
			if len(faults) > 0 && (len(moves) == 0 || rng.IntN(8) == 0) {
				return faults[rng.IntN(len(faults))], true
			}
			return moves[rng.IntN(len(moves))], true
		})
		if errors.Is(err, errNotEnabled) {
			continue
		}
		if err != nil {
			return err
		}
		record(s)
	}
	return nil
}

// runAgain runs a schedule choose picks, as runOnce; when it was
// unsteady, it runs the actions it took again, then asks choose only for
// the steps past them, so that a chooser that draws random numbers
// draws no more for the steps it chose already.
func (e *Explorer) runAgain(ctx context.Context, choose chooser) (*schedule, error) {
	var plan []Action
	for range maxUnsteady {
		s, err := e.runOnce(ctx, plan, choose)
		if !errors.Is(err, errUnsteady) {
			return s, err
		}
		if s != nil && len(s.actions) > len(plan) {
			plan = slices.Clone(s.actions)
		}
	}
	return nil, ErrUnsteady
}

// split is the indexes of the enabled actions that are moves (commands,
// ticks, starts) and of those that are faults.
func split(en []choice) (moves, faults []int) {
	for i, c := range en {
		if c.fault() {
			faults = append(faults, i)
		} else {
			moves = append(moves, i)
		}
	}
	return moves, faults
}

// compareActions orders two schedules of one length, action by action.
func compareActions(a, b []Action) int {
	key := func(x Action) string {
		return fmt.Sprintf("%s|%s|%d|%s|%s|%020d", x.Kind, x.Client, x.Index, x.Command, x.Length, int64(x.At))
	}
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(key(a[i]), key(b[i])); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// pct runs n schedules of probabilistic concurrency testing (Burckhardt
// et al., ASPLOS 2010) from seed: the clients and the clock (whose moves
// are the ticks) get distinct random priorities above depth-1, and the
// highest-priority one that can move moves; at depth-1 random steps out
// of the schedule's bound k, the one about to move drops to a priority
// below all others (depth-1, then depth-2, ...). A fault, when the model
// allows one, strikes at a random step: a random one of those enabled.
func (e *Explorer) pct(ctx context.Context, seed uint64, n, depth int, record func(*schedule), stop func() bool) error {
	rng := mrand.New(mrand.NewPCG(seed, 0x9c7))
	m := e.model
	k := m.Steps*m.Clients + m.Ticks + m.Faults
	longest := 1
	const clockOwner = "clock"
	owner := func(c choice) string {
		if c.Kind == Tick {
			return clockOwner
		}
		return c.Client
	}
	for i := 0; i < n && !stop(); i++ {
		prio := map[string]int{}
		for j, p := range rng.Perm(m.Clients + 1) {
			name := clockOwner
			if j < m.Clients {
				name = clientName(j)
			}
			prio[name] = depth + p
		}
		change := map[int]int{}
		for j := 1; j < depth; j++ {
			change[rng.IntN(k)] = depth - j
		}
		faultAt := -1
		if m.Faults > 0 && len(m.FaultKinds) > 0 {
			faultAt = rng.IntN(k)
		}
		s, err := e.runAgain(ctx, func(d int, en []choice) (int, bool) {
			moves, faults := split(en)
			if len(faults) > 0 && len(moves) == 0 {
				return faults[rng.IntN(len(faults))], true
			}
			best := func() int {
				b := moves[0]
				for _, i := range moves[1:] {
					if prio[owner(en[i])] > prio[owner(en[b])] {
						b = i
					}
				}
				return b
			}
			b := best()
			if faultAt >= 0 && d >= faultAt {
				// The fault strikes the client about to move.
				var mine []int
				for _, i := range faults {
					if en[i].Client == en[b].Client {
						mine = append(mine, i)
					}
				}
				if len(mine) > 0 {
					faultAt = -1
					return mine[rng.IntN(len(mine))], true
				}
			}
			if p, ok := change[d]; ok {
				prio[owner(en[b])] = p
				b = best()
			}
			return b, true
		})
		if errors.Is(err, errNotEnabled) {
			continue
		}
		if err != nil {
			return err
		}
		longest = max(longest, len(s.steps))
		k = longest // the longest schedule yet; the bound before the first
		record(s)
	}
	return nil
}

func keys(m map[string]*Found) []string {
	var out []string
	for _, p := range Properties {
		if m[p] != nil {
			out = append(out, p)
		}
	}
	return out
}

// node is one decision of the depth-first search.
type node struct {
	enabled []choice
	sleep   []choice // explored in another order already
	done    []choice // children explored
	chosen  choice
	// given is the children after chosen handed to other workers
	// (dfs's donate): they count as done once the next child is chosen,
	// not before, since chosen's own subtree must not have them asleep.
	given []choice
}

// task is a subtree of the search: the schedules that start with
// prefix, whose first decision after it has sleep asleep already.
type task struct {
	prefix []Action
	sleep  []choice
}

// splitDepth is the depth, below a parallel search's root, where its
// subtrees are handed to the workers.
const splitDepth = 4

// reduction is which reductions a search makes.
type reduction struct{ sleep, cache bool }

// dfs runs every schedule of t, depth first, pruning with sleep sets and
// the state cache as red says. It reports whether it covered them all. With split set,
// it does not descend below splitDepth decisions: it hands each subtree
// there to split instead, as a task. With share set, whenever a worker
// waits for work, it gives share the untried subtree nearest the root
// (donate), as a lone dfs would search it: with the same sleep set, so
// the same schedules.
func (e *Explorer) dfs(ctx context.Context, t task, red reduction, record func(*schedule), stop func() bool, diverged func(), split func(task), share *pool) (bool, error) {
	var stack []*node
	contains := func(cs []choice, a choice) bool {
		return slices.ContainsFunc(cs, func(c choice) bool { return c.Same(a.Action) })
	}
	next := func(n *node) (choice, bool) {
		for _, c := range n.enabled {
			if !contains(n.sleep, c) && !contains(n.done, c) && !contains(n.given, c) {
				return c, true
			}
		}
		return choice{}, false
	}
	// donate hands share the first untried child of the decision nearest
	// the root that has one, and counts it given (skipped here). Its
	// sleep set is the one dfs alone gives it when its turn comes: what
	// the decision has asleep or done by then (every child before it,
	// the one being searched and those given too) that commutes with it.
	donate := func() bool {
		for k, n := range stack {
			for _, c := range n.enabled {
				if contains(n.sleep, c) || contains(n.done, c) || contains(n.given, c) || c.Same(n.chosen.Action) {
					continue
				}
				path := slices.Clone(t.prefix)
				for _, m := range stack[:k] {
					path = append(path, m.chosen.Action)
				}
				path = append(path, c.Action)
				var sleep []choice
				if red.sleep {
					for _, b := range append(append(append(slices.Clone(n.sleep), n.done...), n.chosen), n.given...) {
						if independent(c, b) {
							sleep = append(sleep, b)
						}
					}
				}
				n.given = append(n.given, c)
				share.put(task{prefix: path, sleep: sleep})
				return true
			}
		}
		return false
	}
	covered := true
	unsteady := 0 // runs in a row that were unsteady
	// visited holds, for each state reached, the sleep sets it was
	// reached with: a state reached again with a sleep set that holds one
	// of them has nothing left to explore.
	visited := map[[32]byte][][]choice{}
	subset := func(a, b []choice) bool {
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
			plan = append(plan, n.chosen.Action)
		}
		var handed []task
		var seen [][32]byte // states this run added to visited
		depth0 := len(stack)
		s, err := e.runOnce(ctx, plan, func(depth int, en []choice) (int, bool) {
			n := &node{enabled: en}
			switch {
			case !red.sleep:
			case len(stack) == 0:
				n.sleep = t.sleep
			default:
				p := stack[len(stack)-1]
				for _, b := range append(slices.Clone(p.sleep), p.done...) {
					if independent(p.chosen, b) {
						n.sleep = append(n.sleep, b)
					}
				}
			}
			if red.cache {
				if key, ok := e.state(); ok {
					for _, z := range visited[key] {
						if subset(z, n.sleep) {
							return 0, false // explored from this state already
						}
					}
					visited[key] = append(visited[key], slices.Clone(n.sleep))
					seen = append(seen, key)
				}
			}
			if split != nil && len(stack) == splitDepth {
				path := slices.Clone(t.prefix)
				for _, m := range stack {
					path = append(path, m.chosen.Action)
				}
				handed = append(handed, task{prefix: path, sleep: n.sleep})
				return 0, false
			}
			c, ok := next(n)
			if !ok {
				return 0, false // every continuation covered in another order
			}
			n.chosen = c
			stack = append(stack, n)
			return slices.IndexFunc(en, func(x choice) bool { return x.Same(c.Action) }), true
		})
		if errors.Is(err, errUnsteady) {
			// Run it again, as if this run had not happened.
			stack = stack[:depth0]
			for _, key := range seen {
				visited[key] = visited[key][:len(visited[key])-1]
			}
			if unsteady++; unsteady >= maxUnsteady {
				return false, ErrUnsteady
			}
			continue
		}
		unsteady = 0
		for _, h := range handed {
			split(h)
		}
		switch {
		case errors.Is(err, errNotEnabled):
			// The replay of a prefix went another way than its first run:
			// the code under test did something the scheduler does not
			// order. The subtree is skipped, and the search is not
			// exhaustive.
			diverged()
			covered = false
		case err != nil:
			return false, err
		case handed == nil:
			record(s)
		}
		if stop() {
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

// parallel runs every schedule, as dfs does, on workers explorers at
// once: this one goes through the decisions down to splitDepth, and every
// worker, this one included once done with that, searches the subtrees
// found there. A worker that finds none left gets one from a worker still
// searching (dfs's share): a few subtrees can hold most of the schedules
// (the fenced fine market's do: results/explore/workers.md), and would
// keep one worker busy while the others idle. Each subtree starts with
// the sleep set dfs alone would give it, so the schedules run are the
// same as dfs's.
func (e *Explorer) parallel(ctx context.Context, workers int, red reduction, record func(*schedule), stop func() bool, diverged func()) (bool, error) {
	for len(e.lanes) < workers-1 {
		l, err := New(ctx, e.base, e.orig, e.model)
		if err != nil {
			return false, err
		}
		e.lanes = append(e.lanes, l)
	}
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
	tasks := newPool(workers)
	work := func(x *Explorer) {
		for {
			t, ok := tasks.get()
			if !ok {
				return
			}
			if ctx.Err() != nil {
				continue // drain: the search failed
			}
			end(x.dfs(ctx, t, red, record, stop, diverged, nil, tasks))
		}
	}
	var wg sync.WaitGroup
	for _, l := range e.lanes[:workers-1] {
		wg.Go(func() { work(l) })
	}
	end(e.dfs(ctx, task{}, red, record, stop, diverged, tasks.put, nil))
	work(e)
	wg.Wait()
	return covered && firstErr == nil, firstErr
}

// pool is the subtrees of a parallel search waiting for a worker, and the
// workers waiting for a subtree.
type pool struct {
	mu      sync.Mutex
	cond    sync.Cond
	queue   []task
	workers int // the workers that take from the pool
	idle    int // those waiting in get
	done    bool
}

func newPool(workers int) *pool {
	p := &pool{workers: workers}
	p.cond.L = &p.mu
	return p
}

// put adds a subtree.
func (p *pool) put(t task) {
	p.mu.Lock()
	p.queue = append(p.queue, t)
	p.mu.Unlock()
	p.cond.Signal()
}

// get waits for a subtree; ok is false once there is none and none can
// come: every worker is waiting.
func (p *pool) get() (t task, ok bool) {
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
func (p *pool) hungry() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle > len(p.queue)
}

// first is the chooser of replays: the first enabled command or tick,
// never a fault.
func first(_ int, en []choice) (int, bool) {
	for i, c := range en {
		if c.Kind == Run || c.Kind == Tick {
			return i, true
		}
	}
	return 0, false
}

// shrink shortens a counterexample: it drops one action at a time, keeping
// each drop after which the replay (then the first enabled command or
// tick at each step) still breaks the property sooner.
func (e *Explorer) shrink(ctx context.Context, f Found) (Found, error) {
	best := f
	for changed := true; changed; {
		changed = false
		for i := len(best.Actions) - 1; i >= 0; i-- {
			cand := slices.Delete(slices.Clone(best.Actions), i, i+1)
			s, err := e.run(ctx, cand, first)
			if errors.Is(err, errNotEnabled) {
				continue
			}
			if err != nil {
				return f, err
			}
			for _, v := range s.violations {
				if v.Property == f.Property && v.Step+1 < best.Step+1 {
					best = Found{Violation: v, Actions: slices.Clone(s.actions[:v.Step+1]), Steps: slices.Clone(s.steps[:v.Step+1])}
					changed = true
				}
			}
			if changed {
				break
			}
		}
	}
	return best, nil
}

// Replay runs one schedule: actions, then the first enabled command or
// tick at each step until nothing is enabled. It returns the steps and
// the violations found.
func (e *Explorer) Replay(ctx context.Context, actions []Action) ([]Step, []Violation, error) {
	s, err := e.run(ctx, actions, first)
	if err != nil {
		return nil, nil, err
	}
	return s.steps, s.violations, nil
}
