package sched

import (
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/result"
)

// Snapshot copies the runtime's record as it stands.
func (w *world) Snapshot() Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Snapshot{Now: w.Now, Step: w.StepIndex, Clients: make([]ClientSnapshot, len(w.Clients)),
		Commands: slices.Clip(w.CmdLog), epoch: w.Epoch, factor: w.Factor}
	for i, c := range w.Clients {
		cs := ClientSnapshot{Name: c.Name, Index: c.Index, Wanted: c.wanted, Got: c.got,
			GaveUp: c.gaveUp, Done: c.done, Completed: c.completed, Crashed: c.crashed,
			Paused: c.paused, PausedUntil: c.pausedUntil, Steps: c.Steps,
			Write: w.Target.Writes(c.Index, len(w.Clients)),
			ids:   [2]int{w.ids[c.Name+" "+IDToken], w.ids[c.Name+" "+IDCall]}}
		if h := c.holding; h != nil {
			cs.Hold = &HoldSnapshot{Write: h.Write, Key: h.Key, End: h.End(), Held: h.held}
		}
		s.Clients[i] = cs
	}
	return s
}

// Holders is the clients that hold a lease not yet run out.
func (s Snapshot) Holders() []ClientSnapshot {
	var out []ClientSnapshot
	for _, c := range s.Clients {
		if c.Hold != nil && (c.Hold.End < 0 || s.Now < c.Hold.End) {
			out = append(out, c)
		}
	}
	return out
}

// NextID is the value of kind (IDToken, IDCall) the explorer would make
// next for the client (Client.NewID): the same in every run of the
// schedule, and unlike any the clients made. Nothing is recorded: it is
// for code the explorer runs at a schedule's end in a client's name (a
// recipe's liveness probe).
func (c ClientSnapshot) NextID(kind string) string {
	n := c.ids[0]
	if kind == IDCall {
		n = c.ids[1]
	}
	return formatID(c.Index, kind, n)
}

// Dilate is the duration the server and the clients' clock see for
// virtual duration v (times Dilation).
func (s Snapshot) Dilate(v time.Duration) time.Duration { return plumbing.DilateBy(s.factor, v) }

// Undilate is the virtual duration of d as the server or the clients'
// clock sees it.
func (s Snapshot) Undilate(d time.Duration) time.Duration {
	return plumbing.UndilateBy(s.factor, d)
}

// At is virtual time v on the clients' clock.
func (s Snapshot) At(v time.Duration) time.Time { return s.epoch.Add(s.Dilate(v)) }

// Expiries is how many times key's lease has run out in the schedule.
func (w *world) Expiries(key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.keyLog[key] {
		if strings.HasPrefix(e, "lease ran out") {
			n++
		}
	}
	return n
}

// KeyLog is a copy of what the schedule has logged on key, in order: each
// write (and WATCH) of a client, each running out of its lease.
func (w *world) KeyLog(key string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.keyLog[key])
}

// Disowned records an ownership violation at the step being taken: a
// client's reply claimed a hold that had ended, for the reason why. The
// message starts with the virtual time.
func (w *world) Disowned(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owned = append(w.owned, result.Violation{Property: result.Ownership, Step: w.StepIndex,
		Message: "at " + action.FormatMS(w.Now.Milliseconds()) + ", " + why})
}
