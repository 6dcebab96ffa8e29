package sched

// A schedule as it runs: the enabled choices (Choice) and the record of
// one run (Schedule).

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/search"
)

// Choice is an enabled action with what it touches, for the reduction.
type Choice struct {
	action.Action
	keys  []string
	write bool
	// written is the keys among keys it may write; nil with write set
	// for all of them.
	written []string
	p       *parked
}

// writes reports whether c may write key k.
func (c Choice) writes(k string) bool {
	if c.written == nil {
		return c.write
	}
	return slices.Contains(c.written, k)
}

// Schedule is one run of the target's clients under the scheduler.
type Schedule struct {
	Steps      []action.Step
	actions    []action.Action
	Violations []result.Violation
	Faults     int
	Ticks      int
	Complete   bool // ran until nothing was enabled (not cut by the chooser)
	CmdLog     []CmdRecord
	Expired    []expiry
	lost       map[int][]string // keys a node fault lost, by step
	Clients    []string
	End        time.Duration
	// world is the schedule's world, kept to read where it stopped
	// (Snapshot, Canonical).
	world *world
}

// Snapshot is a copy of the runtime's record of the schedule where it
// stopped.
func (s *Schedule) Snapshot() Snapshot { return s.world.Snapshot() }

type expiry struct {
	At   time.Duration
	Keys []string
}

// errUnsteady is returned by runOnce when the real time the schedule
// took may have changed its outcome: a stall of this process or of the
// server longer than the margin of a lease on the server (which runs down
// in real time between two advances of the clock; dilated, the margin is
// the virtual time left times Dilation), or a command whose reply came
// back so late that whether a lease outlived an advance of the clock is
// not known. The schedule is run again.
var errUnsteady = fmt.Errorf(
	"explore: the schedule's real timing was unsteady: %w",
	search.ErrRetry,
)

// errScriptMissed is returned by runOnce for a run in which an EVALSHA
// met NOSCRIPT: the server's script cache, which no reset of the
// namespace clears, made that run differ from the same schedule run
// later. The run is void and run again, with the script cached (the
// EVAL after the NOSCRIPT cached it), so that the search does not depend
// on what earlier runs or searches left on the server.
var errScriptMissed = fmt.Errorf(
	"explore: a script was not yet cached on the server: %w",
	search.ErrRetry,
)

// ErrUnsteady is returned when a schedule was unsteady (a stall longer
// than a lease's margin) in every one of maxUnsteady runs: the machine
// is too busy for the model's leases.
var ErrUnsteady = errors.New(
	"explore: the machine stalled longer than a lease's margin, run after run",
)

// ErrTarget wraps an error of the code under test that is not a
// property violation: a Lua script that failed or answered outside the
// convention, say.
var ErrTarget = errors.New("explore: the target failed")

// ClientName is the name of the i-th client: "A", "B", "C"...
func ClientName(i int) string { return string(rune('A' + i)) }

func (w *world) client(name string) *clientState {
	for _, c := range w.Clients {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// hasWork reports whether c is still at something (parked or asleep).
// w.mu is held.
func (w *world) hasWork(c *clientState) bool {
	for _, p := range w.parked {
		if p.c == c {
			return true
		}
	}
	for _, s := range w.sleepers {
		if s.c == c {
			return true
		}
	}
	return false
}
