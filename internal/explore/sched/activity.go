package sched

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrVacuous is returned (by Result.Vacuous) for a search of a recipe in
// which nothing it was about happened: an operation never succeeded, or
// no client ever held the lock. Its verdict, violation or none, proves
// nothing; the message names the operation and its ok.
var ErrVacuous = errors.New("explore: the search proved nothing")

// OpCount is how often one operation of a recipe was called in the
// complete schedules of a search, and how often its reply meant success.
type OpCount struct {
	// Op is the operation: acquire, release, extend, read_acquire, ...
	Op string `json:"op"`
	// Calls and Succeeded count its calls, and those whose reply meant
	// success (its ok).
	Calls     int `json:"calls"`
	Succeeded int `json:"succeeded"`
	// OK is the replies that mean success, as the manifest gives them.
	OK string `json:"ok"`
	// Replies is a few of the replies it got, with how often, as
	// `"OK" ×12`.
	Replies []string `json:"replies,omitempty"`
}

// maxReplies is how many distinct replies of an op are kept.
const maxReplies = 4

// opTally is what a schedule, or a search, saw of one op.
type opTally struct {
	calls, ok int
	replies   map[string]int
	order     []string // the replies in the order first seen
}

func (t *opTally) add(u *opTally) {
	t.calls += u.calls
	t.ok += u.ok
	for _, r := range u.order {
		t.note(r, u.replies[r])
	}
}

func (t *opTally) note(reply string, n int) {
	if t.replies == nil {
		t.replies = map[string]int{}
	}
	if _, ok := t.replies[reply]; !ok {
		if len(t.order) >= maxReplies {
			return
		}
		t.order = append(t.order, reply)
	}
	t.replies[reply] += n
}

// CountOp records a call of the op named op whose reply, as text, was
// reply, a success or not.
func (w *world) CountOp(op, reply string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ops == nil {
		w.ops = map[string]*opTally{}
	}
	t := w.ops[op]
	if t == nil {
		t = &opTally{}
		w.ops[op] = t
	}
	t.calls++
	if ok {
		t.ok++
	}
	t.note(reply, 1)
}

// activity is what a search's complete schedules saw: how many had a
// holder, and each op's calls.
type activity struct {
	mu        sync.Mutex
	schedules int
	held      int
	ops       map[string]*opTally
	// started is, by client, the commands sent from goroutines it
	// started; timers is the timers of the clients' code that fired.
	started map[string]int
	timers  int
}

// tally adds a complete schedule's world to a.
func (a *activity) tally(w *world) {
	w.mu.Lock()
	held := slices.ContainsFunc(w.Clients, func(c *clientState) bool { return c.got > 0 })
	started := map[string]int{}
	for _, c := range w.Clients {
		started[c.Name] = c.FromStarted
	}
	timers := w.timersFired
	ops := map[string]*opTally{}
	for name, t := range w.ops {
		u := &opTally{}
		u.add(t)
		ops[name] = u
	}
	w.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.schedules++
	if held {
		a.held++
	}
	if a.started == nil {
		a.started = map[string]int{}
	}
	for name, n := range started {
		a.started[name] += n
	}
	a.timers += timers
	if a.ops == nil {
		a.ops = map[string]*opTally{}
	}
	for name, t := range ops {
		if a.ops[name] == nil {
			a.ops[name] = &opTally{}
		}
		a.ops[name].add(t)
	}
}

func (a *activity) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.schedules, a.held, a.ops, a.started, a.timers = 0, 0, nil, nil, 0
}

// report writes into res what the explorers (a search's workers) saw:
// the schedules with a holder, and for a recipe each op's counts.
func report(res *Result, t *Target, es []*Explorer) {
	sum := &activity{ops: map[string]*opTally{}}
	for _, e := range es {
		e.act.mu.Lock()
		sum.held += e.act.held
		res.TimersFired += e.act.timers
		for name, n := range e.act.started {
			if res.FromStarted == nil {
				res.FromStarted = map[string]int{}
			}
			res.FromStarted[name] += n
		}
		for name, u := range e.act.ops {
			if sum.ops[name] == nil {
				sum.ops[name] = &opTally{}
			}
			sum.ops[name].add(u)
		}
		e.act.mu.Unlock()
	}
	res.Held = sum.held
	res.vacuity = t.lock().Ops != nil
	for _, o := range t.lock().Ops {
		c := OpCount{Op: o.Name, OK: o.OK}
		if u := sum.ops[o.Name]; u != nil {
			c.Calls, c.Succeeded = u.calls, u.ok
			for _, r := range u.order {
				c.Replies = append(c.Replies, fmt.Sprintf("%s ×%d", r, u.replies[r]))
			}
		}
		res.Ops = append(res.Ops, c)
	}
}

// Vacuous says, for a search of a recipe that found no violation, why its
// verdict proves nothing (wrapping ErrVacuous), or nil: an op that was
// called and never succeeded (a release or an extension only in a search
// through every schedule: a few random ones may all have lost the lease),
// or no client that ever held the lock.
func (r *Result) Vacuous() error {
	if !r.vacuity || len(r.Violations) > 0 || r.Schedules == 0 {
		return nil
	}
	for _, o := range r.Ops {
		take := strings.HasSuffix(o.Op, "acquire")
		if o.Calls == 0 || o.Succeeded > 0 || !take && !r.Exhaustive {
			continue
		}
		replies := "none"
		if len(o.Replies) > 0 {
			replies = strings.Join(o.Replies, ", ")
		}
		why := "so no client ever held the lock"
		if !take {
			why = "so the search never saw one succeed"
		}
		return fmt.Errorf(
			"%w: ops.%s.ok %s matched none of its %d replies in %d schedules (%s), %s: "+
				"fix its ok, or the op",
			ErrVacuous, o.Op, o.OK, o.Calls, r.Schedules, replies, why,
		)
	}
	if r.Held == 0 {
		return fmt.Errorf(
			"%w: no client held the lock in any of %d schedules", ErrVacuous, r.Schedules,
		)
	}
	return nil
}

// ActivityText says what happened in the search: how many schedules had
// a holder, and how often each op of a recipe succeeded.
func (r *Result) ActivityText() string {
	s := fmt.Sprintf("activity: a client held the lock in %d of %d schedules", r.Held, r.Schedules)
	if r.WholeCount {
		// Held and Ops count what the shards ran.
		s = fmt.Sprintf("activity: a client held the lock in %d of the %d schedules the "+
			"shards ran", r.Held, r.ShardSchedules)
	}
	var parts []string
	for _, o := range r.Ops {
		parts = append(parts, fmt.Sprintf("%s %d of %d", o.Op, o.Succeeded, o.Calls))
	}
	if len(parts) > 0 {
		s += "; succeeded: " + strings.Join(parts, ", ")
	}
	return s
}
