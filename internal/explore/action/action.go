package action

import (
	"fmt"
	"strings"
	"time"
)

// The kinds of Action.
const (
	// Run releases one pending command (or pipeline) of a client: Redis
	// runs it now.
	Run = "run"
	// Tick advances the virtual clock to a deadline: a client's sleep, or
	// the end of a pause. Every sleep due by then ends, every pause ends,
	// and every lease in the namespace shortens by the time that passed.
	Tick = "tick"
	// Pause freezes a client (all its goroutines) for a length: short
	// (half the lease), long (one and a half leases) or forever (it never
	// runs again, but it is not dead: what it holds, it still holds).
	Pause = "pause"
	// Crash stops a client for good: its pending command is never sent,
	// and it counts as dead for liveness.
	Crash = "crash"
	// Start lets a client begin a critical section (take the lock): at
	// the start of the schedule, or after time has passed.
	Start = "start"
)

// The pause lengths.
const (
	Short   = "short"
	Long    = "long"
	Forever = "forever"
)

// Action is one choice of the scheduler. It is JSON-serialisable; an
// action read back from JSON identifies the same choice (Same).
type Action struct {
	Kind   string `json:"kind"`
	Client string `json:"client,omitempty"`
	// Index is, for Run, which of the client's pending commands (they are
	// ordered by command and key); almost always 0.
	Index int `json:"index,omitempty"`
	// Command is, for Run, the command's name and keys (for reading, and
	// to tell commands apart).
	Command string `json:"command,omitempty"`
	// Length is a Pause's length: short, long or forever.
	Length string `json:"length,omitempty"`
	// At is, for Tick, the virtual time it advances to, to the
	// nanosecond: a sleep of the code under test can end between two
	// milliseconds (Dilation). In JSON it is at_ms, in milliseconds with
	// the decimals it needs to be exact.
	At time.Duration `json:"-"`
	// Node is, for Restart and Jump, the node that fails.
	Node string `json:"node,omitempty"`
	// Timer is set, for Tick, when the clock advances until a timer of
	// the clients' code fires (at most timerHorizon), the clients running
	// in a bubble (package sched): At is then 0.
	Timer bool `json:"timer,omitempty"`
}

// Same reports whether a and b are the same choice.
func (a Action) Same(b Action) bool {
	return a.Kind == b.Kind && a.Client == b.Client && a.Index == b.Index &&
		a.Command == b.Command &&
		a.Length == b.Length && a.At == b.At &&
		a.Node == b.Node && a.Timer == b.Timer
}

// Step is one action of a schedule as it ran.
type Step struct {
	Action Action `json:"action"`
	// ClockMS is the virtual time when it ran.
	ClockMS int64 `json:"clock_ms"`
	// Text says what happened: the command and its reply, the fault.
	Text string `json:"text"`
	// HeldMS is, for a command, how long it was held in flight: it was
	// sent HeldMS before ClockMS, when it landed (0: it landed as it was
	// sent).
	HeldMS int64 `json:"held_ms,omitempty"`
	// Violation names the property that broke at this step, if any.
	Violation string `json:"violation,omitempty"`
}

// CompareAction orders two actions, field by field.
func CompareAction(a, b Action) int {
	key := func(x Action) string {
		return fmt.Sprintf(
			"%s|%s|%d|%s|%s|%020d|%s", x.Kind, x.Client, x.Index, x.Command, x.Length, int64(x.At),
			x.Node,
		)
	}
	return strings.Compare(key(a), key(b))
}

// CompareActions orders two schedules of one length, action by action.
func CompareActions(a, b []Action) int {
	for i := range min(len(a), len(b)) {
		if c := CompareAction(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// The kinds of Action that strike a node.
const (
	// Restart is a node that restarts empty (FaultNodeRestart).
	Restart = "restart"
	// Jump is a node's clock jumping forward (FaultClockJump).
	Jump = "jump"
)
