package sched

import (
	"context"
	"fmt"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
)

// fault is how the runtime strikes one kind of fault (what the fault is,
// its name and its action, is its Fault). A new fault is one entry of
// faults, and one of the Fault's methods.
type fault struct {
	// name is the fault's name in Model.FaultKinds and -faults.
	name action.Fault
	// enabled reports whether it may strike on now (the model's bound on
	// faults aside). w.mu is held.
	enabled func(w *world, on string) bool
	// strike does it, and says what happened.
	strike func(ctx context.Context, e *Explorer, w *world, s *Schedule, a action.Action) (string, error)
	// commutes reports whether the fault a commutes with the enabled
	// action b: taken in either order, they reach the same state.
	commutes func(a, b Choice) bool
}

// faultTable lists how the faults strike. It is filled by init: its entries
// refer to it.
var faultTable []fault

func init() {
	faultTable = []fault{
		pauseFault(action.FaultPauseShort),
		pauseFault(action.FaultPauseLong),
		pauseFault(action.FaultPauseForever),
		{
			name:    action.FaultCrash,
			enabled: clientMayFault,
			strike: func(
				_ context.Context, _ *Explorer, w *world, _ *Schedule, a action.Action,
			) (string, error) {
				w.mu.Lock()
				w.client(a.Client).crashed = true
				w.mu.Unlock()
				return a.Client + " crashes: its pending command is never sent", nil
			},
			commutes: clientFaultCommutes,
		},
		{
			name:     action.FaultNodeRestart,
			enabled:  nodeMayFault,
			strike:   restartNode,
			commutes: nodeFaultCommutes,
		},
		{
			name:     action.FaultClockJump,
			enabled:  nodeMayFault,
			strike:   jumpNode,
			commutes: nodeFaultCommutes,
		},
	}
}

// pauseFault is a pause of a client (for its length by the model).
func pauseFault(name action.Fault) fault {
	return fault{
		name:    name,
		enabled: clientMayFault,
		strike: func(
			_ context.Context, e *Explorer, w *world, _ *Schedule, a action.Action,
		) (string, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			c := w.client(a.Client)
			c.paused = true
			c.pauses++
			c.pausedUntil = -1
			if d, _ := e.model.PauseLength(a.Length); d >= 0 {
				c.pausedUntil = w.Now + d
				return fmt.Sprintf("%s pauses until %s", a.Client, action.FormatAt(c.pausedUntil)), nil
			}
			return a.Client + " pauses for good (alive, never runs again)", nil
		},
		commutes: clientFaultCommutes,
	}
}

// clientMayFault: a fault may strike a client still at something, neither
// paused nor crashed. w.mu is held.
func clientMayFault(w *world, name string) bool {
	c := w.client(name)
	return c != nil && !c.paused && !c.crashed && w.hasWork(c)
}

// nodeMayFault: a fault may strike a node a write went to since it last
// restarted (elsewhere a restart or a clock jump changes nothing). w.mu
// is held.
func nodeMayFault(w *world, node string) bool { return w.nodeDirty[node] }

// clientFaultCommutes: a fault of a client commutes with what another
// client does and with the faults of nodes; not with a tick.
func clientFaultCommutes(a, b Choice) bool { return b.Kind != action.Tick && b.Client != a.Client }

// nodeFaultCommutes: a fault of a node commutes with what touches no key
// on its node (another client's start or fault, a command to another node
// or to the one server), and with a fault of another node; not with a
// tick, which shortens the leases on every node.
func nodeFaultCommutes(a, b Choice) bool {
	if b.Kind == action.Tick {
		return false
	}
	if b.IsFault() && b.Node != "" {
		return b.Node != a.Node
	}
	if b.Kind == action.Run {
		for _, k := range b.keys {
			if _, node := plumbing.SplitNode(k); k == "*" || node == a.Node {
				return false
			}
		}
	}
	return true
}

// faultOf is how the fault an action strikes strikes, or nil when it is
// no fault.
func faultOf(a action.Action) *fault {
	if name, ok := action.FaultOf(a); ok {
		return faultNamed(name)
	}
	return nil
}

// faultNamed is how the fault of that name strikes, or nil.
func faultNamed(name action.Fault) *fault {
	for i := range faultTable {
		if faultTable[i].name == name {
			return &faultTable[i]
		}
	}
	return nil
}

// enabledFaults is the faults of the model that may strike now: each
// client's, then each node's. w.mu is held.
func (w *world) enabledFaults(m action.Model) []Choice {
	if len(m.FaultKinds) == 0 {
		return nil
	}
	// Room for every fault on every client and node: a step asks this
	// anew, and growing the slice choice by choice was a tenth of the
	// bytes a search allocated.
	nodes := w.Target.Nodes()
	out := make([]Choice, 0, len(m.FaultKinds)*(len(w.Clients)+nodes))
	add := func(node bool, on string) {
		for _, name := range m.FaultKinds {
			if f := faultNamed(name); f != nil && name.Node() == node && f.enabled(w, on) {
				out = append(out, Choice{Action: name.On(on)})
			}
		}
	}
	for _, c := range w.Clients {
		add(false, c.Name)
	}
	for i := range nodes {
		add(true, plumbing.NodeName(i))
	}
	return out
}
