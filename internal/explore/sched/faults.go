package sched

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
)

// fault is one kind of fault: everything the explorer knows of it. A new
// fault is one entry of faults.
type fault struct {
	// name is the fault's name in Model.FaultKinds and -faults.
	name Fault
	// node is set for a fault that strikes a node of a target of several
	// (Redlock), not a client.
	node bool
	// action is the fault striking on (a client's name, or a node's).
	action func(on string) Action
	// enabled reports whether it may strike on now (the model's bound on
	// faults aside). w.mu is held.
	enabled func(w *world, on string) bool
	// strike does it, and says what happened.
	strike func(ctx context.Context, e *Explorer, w *world, s *Schedule, a Action) (string, error)
	// commutes reports whether the fault a commutes with the enabled
	// action b: taken in either order, they reach the same state.
	commutes func(a, b Choice) bool
	// describe says what the action does (Action.String).
	describe func(a Action) string
	// pause is, for a pause, how long it lasts under m; -1 for good.
	pause func(m Model) time.Duration
}

// faults lists the faults, in the order they are enabled (by client, then
// by node, each in this order). It is filled by init: its entries refer
// to it.
var faults []fault

func init() {
	faults = []fault{
		pauseFault(FaultPauseShort, Short, func(m Model) time.Duration { return m.TTL / 2 }),
		pauseFault(FaultPauseLong, Long, func(m Model) time.Duration { return m.TTL * 3 / 2 }),
		pauseFault(FaultPauseForever, Forever, func(Model) time.Duration { return -1 }),
		{
			name:    FaultCrash,
			action:  func(c string) Action { return Action{Kind: Crash, Client: c} },
			enabled: clientMayFault,
			strike: func(
				_ context.Context, _ *Explorer, w *world, _ *Schedule, a Action,
			) (string, error) {
				w.mu.Lock()
				w.client(a.Client).crashed = true
				w.mu.Unlock()
				return a.Client + " crashes: its pending command is never sent", nil
			},
			commutes: clientFaultCommutes,
			describe: func(a Action) string { return a.Client + " crashes" },
		},
		{
			name:     FaultNodeRestart,
			node:     true,
			action:   func(n string) Action { return Action{Kind: Restart, Node: n} },
			enabled:  nodeMayFault,
			strike:   restartNode,
			commutes: nodeFaultCommutes,
			describe: func(a Action) string { return a.Node + " restarts empty" },
		},
		{
			name:     FaultClockJump,
			node:     true,
			action:   func(n string) Action { return Action{Kind: Jump, Node: n} },
			enabled:  nodeMayFault,
			strike:   jumpNode,
			commutes: nodeFaultCommutes,
			describe: func(a Action) string { return a.Node + "'s clock jumps" },
		},
	}
	for _, f := range faults {
		faultNames = append(faultNames, string(f.name))
	}
}

// pauseFault is a pause of a client for length (by the model).
func pauseFault(name Fault, length string, pause func(Model) time.Duration) fault {
	return fault{
		name:    name,
		action:  func(c string) Action { return Action{Kind: Pause, Client: c, Length: length} },
		enabled: clientMayFault,
		strike: func(
			_ context.Context, e *Explorer, w *world, _ *Schedule, a Action,
		) (string, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			c := w.client(a.Client)
			c.paused = true
			c.pauses++
			c.pausedUntil = -1
			if d := pause(e.model); d >= 0 {
				c.pausedUntil = w.Now + d
				return fmt.Sprintf("%s pauses until %s", a.Client, fmtAt(c.pausedUntil)), nil
			}
			return a.Client + " pauses for good (alive, never runs again)", nil
		},
		commutes: clientFaultCommutes,
		describe: func(a Action) string {
			return fmt.Sprintf("%s paused "+
				"(%s)", a.Client, a.Length)
		},
		pause: pause,
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
func clientFaultCommutes(a, b Choice) bool { return b.Kind != Tick && b.Client != a.Client }

// nodeFaultCommutes: a fault of a node commutes with what touches no key
// on its node (another client's start or fault, a command to another node
// or to the one server), and with a fault of another node; not with a
// tick, which shortens the leases on every node.
func nodeFaultCommutes(a, b Choice) bool {
	if b.Kind == Tick {
		return false
	}
	if b.fault() && b.Node != "" {
		return b.Node != a.Node
	}
	if b.Kind == Run {
		for _, k := range b.keys {
			if _, node := plumbing.SplitNode(k); k == "*" || node == a.Node {
				return false
			}
		}
	}
	return true
}

// faultOf is the fault an action strikes, or nil when it is no fault.
func faultOf(a Action) *fault {
	for i := range faults {
		f := &faults[i]
		on := a.Client
		if f.node {
			on = a.Node
		}
		if f.action(on) == a {
			return f
		}
	}
	return nil
}

// faultNamed is the fault of that name, or nil.
func faultNamed(name Fault) *fault {
	for i := range faults {
		if faults[i].name == name {
			return &faults[i]
		}
	}
	return nil
}

// fault reports whether the action is a fault.
func (a Action) fault() bool { return faultOf(a) != nil }

// enabledFaults is the faults of the model that may strike now: each
// client's, then each node's. w.mu is held.
func (w *world) enabledFaults(m Model) []Choice {
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
			if f := faultNamed(name); f != nil && f.node == node && f.enabled(w, on) {
				out = append(out, Choice{Action: f.action(on)})
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

// PauseLength is how long a pause of that length lasts under m, -1 for
// good; ok is false for no pause of the table.
func (m Model) PauseLength(length string) (d time.Duration, ok bool) {
	for _, f := range faults {
		if f.pause != nil && f.action("").Length == length {
			return f.pause(m), true
		}
	}
	return 0, false
}

// isNodeFault reports whether the named fault strikes a node.
func isNodeFault(name Fault) bool {
	f := faultNamed(name)
	return f != nil && f.node
}

// nodeFaultNames lists the faults that strike a node.
func nodeFaultNames() string {
	var out []string
	for _, f := range faults {
		if f.node {
			out = append(out, string(f.name))
		}
	}
	return strings.Join(out, " and ")
}

// faultNames lists the fault kinds ParseFaults accepts; "pause" stands
// for the three pauses. The node faults need a target of several nodes.
var faultNames = []string{"pause"}

// FaultNames lists the fault kinds ParseFaults accepts, "pause" standing
// for the three pauses; the slice is the caller's.
func FaultNames() []string { return slices.Clone(faultNames) }

// JoinFaults joins the kinds' names with sep between them.
func JoinFaults(fs []Fault, sep string) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = string(f)
	}
	return strings.Join(names, sep)
}

// ParseFaults reads a comma-separated list of fault kinds ("pause" is
// short, long and forever; "none" or "" is none).
func ParseFaults(s string) ([]Fault, error) {
	var out []Fault
	add := func(f Fault) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	for f := range strings.SplitSeq(s, ",") {
		switch f = strings.TrimSpace(f); {
		case f == "" || f == "none":
		case f == "pause":
			for _, g := range faults {
				if g.pause != nil {
					add(g.name)
				}
			}
		case faultNamed(Fault(f)) != nil:
			add(Fault(f))
		default:
			return nil, fmt.Errorf(
				"unknown fault %q (known: %s)", f, strings.Join(faultNames, ", "),
			)
		}
	}
	return out, nil
}
