package sched

import (
	"slices"
	"strings"
	"time"
)

// Snapshot is the runtime's record of one schedule at one moment, copied:
// what a target's end-of-schedule check, a recipe's judgement of a reply
// and the views read. Nothing done to it reaches the runtime, which alone
// writes its record.
type Snapshot struct {
	// Now is the virtual time.
	Now time.Duration
	// Step is the index of the step being taken.
	Step int
	// Clients is each client as it stands, in order.
	Clients []ClientSnapshot
}

// ClientSnapshot is one client as the runtime records it.
type ClientSnapshot struct {
	Name  string
	Index int
	// Wanted: it tried to take the lock.
	Wanted bool
	// Got is how many holds it took.
	Got int
	// GaveUp: its last attempt was refused and it stopped trying.
	GaveUp bool
	// Done: it finished its workload.
	Done bool
	// Completed is how many of its critical sections' writes were
	// applied.
	Completed int
	Crashed   bool
	Paused    bool
	// PausedUntil is when its pause ends; -1 for good.
	PausedUntil time.Duration
	// Steps is how many of its commands were released.
	Steps int
	// Hold is what it believes it holds; nil for nothing.
	Hold *HoldSnapshot
}

// HoldSnapshot is a hold a client believes it has.
type HoldSnapshot struct {
	Write bool
	// Key is the lock key, when the target tells; empty: its first lock
	// key.
	Key string
	// End is when the lease ends on the virtual clock; -1 for never.
	End time.Duration
	// Held is the hold as the target's Locker returned it; nil when the
	// hold is not the workload's (Go code of the user's, a lock read from
	// commands).
	Held Held
}

// Snapshot copies the runtime's record as it stands.
func (w *World) Snapshot() Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Snapshot{Now: w.Now, Step: w.StepIndex, Clients: make([]ClientSnapshot, len(w.Clients))}
	for i, c := range w.Clients {
		cs := ClientSnapshot{Name: c.Name, Index: c.Index, Wanted: c.wanted, Got: c.got,
			GaveUp: c.gaveUp, Done: c.done, Completed: c.completed, Crashed: c.crashed,
			Paused: c.paused, PausedUntil: c.pausedUntil, Steps: c.Steps}
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

// Expiries is how many times key's lease has run out in the schedule.
func (w *World) Expiries(key string) int {
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
func (w *World) KeyLog(key string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.keyLog[key])
}

// Commands is a copy of the commands executed so far.
func (w *World) Commands() []CmdRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.CmdLog)
}

// Disowned records an ownership violation at the step being taken: a
// client's reply claimed a hold that had ended, for the reason why. The
// message starts with the virtual time.
func (w *World) Disowned(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.owned = append(w.owned, Violation{Property: Ownership, Step: w.StepIndex,
		Message: "at " + FormatMS(w.Now.Milliseconds()) + ", " + why})
}
