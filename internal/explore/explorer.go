package explore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
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
	e := &Explorer{target: &tc, model: m, ns: tc.ns}
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
	if err := resetScript.Run(ctx, e.rdb, nil, e.ns+"*").Err(); err != nil {
		return fmt.Errorf("explore: resetting the namespace: %w", err)
	}
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
	// model's bounds) or "random" (Schedules random walks from Seed).
	Mode string
	// Seed and Schedules configure the random mode.
	Seed      uint64
	Schedules int
	// NoReduction turns off the sleep-set reduction (steps of different
	// clients on different keys, or only reading the same ones, are
	// explored in one order only).
	NoReduction bool
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
	// number cut short because every continuation had been covered in
	// another order (the reduction).
	Schedules int `json:"schedules"`
	Pruned    int `json:"pruned"`
	// Diverged is the number of replays that did not follow their
	// prefix (the code did something the scheduler does not order); the
	// search is exhaustive only when it is 0.
	Diverged int `json:"diverged"`
	// Exhaustive is true when every schedule within the bounds was
	// covered.
	Exhaustive bool          `json:"exhaustive"`
	Elapsed    time.Duration `json:"-"`
	// Violations holds the first violation found of each property, with
	// the shortest schedule found that breaks it.
	Violations []Found `json:"violations"`
}

// Found is a violated property and its counterexample.
type Found struct {
	Violation
	// Actions is the schedule to replay (Explorer.Replay).
	Actions []Action `json:"actions"`
	// Steps is the schedule as it ran, up to the violation.
	Steps []Step `json:"steps"`
}

// Explore searches the target's schedules within the model's bounds.
func (e *Explorer) Explore(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	check := o.Check
	if check == nil {
		check = e.target.Checks
	}
	res := &Result{Target: e.target.Name, About: e.target.About, Model: e.model, Mode: o.Mode, Checked: check}
	found := map[string]*Found{}
	last := time.Now()
	record := func(s *schedule) {
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
			if f := found[v.Property]; f == nil || cost < f.Step+1 {
				found[v.Property] = &Found{Violation: v, Actions: slices.Clone(s.actions[:cost]), Steps: slices.Clone(s.steps[:cost])}
			}
		}
		if o.Progress != nil && time.Since(last) > 5*time.Second {
			last = time.Now()
			o.Progress(Progress{Schedules: res.Schedules, Elapsed: time.Since(start), Found: keys(found)})
		}
	}
	stopNow := func() bool {
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
	var err error
	switch o.Mode {
	case "random":
		res.Seed = o.Seed
		n := o.Schedules
		if n <= 0 {
			n = 1000
		}
		err = e.walk(ctx, o.Seed, n, record, stopNow)
	default:
		res.Mode = "exhaustive"
		if (o.StopAtFirst || len(o.Stop) > 0) && o.prefix == nil {
			// Looking for a counterexample, not a proof: try random
			// schedules first, then every schedule.
			if err = e.walk(ctx, 1, probeSchedules, record, stopNow); err != nil || stopNow() {
				break
			}
		}
		res.Exhaustive, err = e.dfs(ctx, o.prefix, !o.NoReduction, record, stopNow, &res.Diverged)
	}
	if err != nil {
		return res, err
	}
	for _, p := range Properties {
		f := found[p]
		if f == nil {
			continue
		}
		if !o.NoShrink {
			if g, err := e.shrink(ctx, *f); err == nil {
				f = &g
			} else if !errors.Is(err, errNotEnabled) {
				return res, err
			}
		}
		res.Violations = append(res.Violations, *f)
	}
	res.Elapsed = time.Since(start)
	return res, nil
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
		s, err := e.run(ctx, nil, func(_ int, en []choice) (int, bool) {
			var moves, faults []int
			for i, c := range en {
				if c.fault() {
					faults = append(faults, i)
				} else {
					moves = append(moves, i)
				}
			}
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
}

// dfs runs every schedule, depth first, pruning with sleep sets when
// reduce is set. It reports whether it covered them all.
func (e *Explorer) dfs(ctx context.Context, prefix []Action, reduce bool, record func(*schedule), stop func() bool, diverged *int) (bool, error) {
	var stack []*node
	contains := func(cs []choice, a choice) bool {
		return slices.ContainsFunc(cs, func(c choice) bool { return c.Same(a.Action) })
	}
	next := func(n *node) (choice, bool) {
		for _, c := range n.enabled {
			if !contains(n.sleep, c) && !contains(n.done, c) {
				return c, true
			}
		}
		return choice{}, false
	}
	for {
		plan := slices.Clone(prefix)
		for _, n := range stack {
			plan = append(plan, n.chosen.Action)
		}
		s, err := e.run(ctx, plan, func(depth int, en []choice) (int, bool) {
			n := &node{enabled: en}
			if reduce && len(stack) > 0 {
				p := stack[len(stack)-1]
				for _, b := range append(slices.Clone(p.sleep), p.done...) {
					if independent(p.chosen, b) {
						n.sleep = append(n.sleep, b)
					}
				}
			}
			c, ok := next(n)
			if !ok {
				return 0, false // every continuation covered in another order
			}
			n.chosen = c
			stack = append(stack, n)
			return slices.IndexFunc(en, func(x choice) bool { return x.Same(c.Action) }), true
		})
		switch {
		case errors.Is(err, errNotEnabled):
			// The replay of a prefix went another way than its first run:
			// the code under test did something the scheduler does not
			// order. The subtree is skipped, and the search is not
			// exhaustive.
			*diverged++
		case err != nil:
			return false, err
		default:
			record(s)
		}
		if stop() {
			return false, nil
		}
		// Backtrack to the deepest decision with an alternative left.
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			n.done = append(n.done, n.chosen)
			if c, ok := next(n); ok {
				n.chosen = c
				break
			}
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return *diverged == 0, nil
		}
	}
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
