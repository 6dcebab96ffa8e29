package sched

import (
	"fmt"
	"slices"

	"github.com/lockmarket/lockmarket/internal/explore/result"
)

// maxReplies is how many distinct replies of an op are kept.
const maxReplies = 4

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
func report(res *result.Result, t *Target, es []*Explorer) {
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
	res.Recipe = t.lock().Ops != nil
	for _, o := range t.lock().Ops {
		c := result.OpCount{Op: o.Name, OK: o.OK}
		if u := sum.ops[o.Name]; u != nil {
			c.Calls, c.Succeeded = u.calls, u.ok
			for _, r := range u.order {
				c.Replies = append(c.Replies, fmt.Sprintf("%s ×%d", r, u.replies[r]))
			}
		}
		res.Ops = append(res.Ops, c)
	}
}
