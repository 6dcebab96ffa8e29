package action

import (
	"fmt"
	"slices"
	"strings"
)

// A Fault is a kind of fault a model may allow, named as -faults, the
// service's JSON and the result's model name it.
type Fault string

// The faults a model may allow that strike a client (those that strike a
// node are FaultNodeRestart and FaultClockJump).
const (
	FaultPauseShort   Fault = "pause-short"
	FaultPauseLong    Fault = "pause-long"
	FaultPauseForever Fault = "pause-forever"
	FaultCrash        Fault = "crash"
)

// The faults of a node, for targets of several nodes.
const (
	// FaultNodeRestart lets a node restart empty, as a node without
	// persistence does: every key it held is lost.
	FaultNodeRestart Fault = "node-restart"
	// FaultClockJump lets a node's clock jump forward by Model.Jump: its
	// leases shorten by as much, while the clients' clock does not move.
	FaultClockJump Fault = "clock-jump"
)

// allFaults lists every fault, in the order they are enabled (by client,
// then by node, each in this order).
var allFaults = []Fault{
	FaultPauseShort, FaultPauseLong, FaultPauseForever, FaultCrash,
	FaultNodeRestart, FaultClockJump,
}

// Node reports whether f strikes a node of a target of several (Redlock),
// not a client.
func (f Fault) Node() bool { return f == FaultNodeRestart || f == FaultClockJump }

// On is the action of f striking on: a client's name, or a node's. It is
// the zero Action for no fault of the list.
func (f Fault) On(on string) Action {
	switch f {
	case FaultPauseShort:
		return Action{Kind: Pause, Client: on, Length: Short}
	case FaultPauseLong:
		return Action{Kind: Pause, Client: on, Length: Long}
	case FaultPauseForever:
		return Action{Kind: Pause, Client: on, Length: Forever}
	case FaultCrash:
		return Action{Kind: Crash, Client: on}
	case FaultNodeRestart:
		return Action{Kind: Restart, Node: on}
	case FaultClockJump:
		return Action{Kind: Jump, Node: on}
	}
	return Action{}
}

// FaultOf is the fault an action strikes; ok is false when it is no
// fault.
func FaultOf(a Action) (f Fault, ok bool) {
	for _, f := range allFaults {
		on := a.Client
		if f.Node() {
			on = a.Node
		}
		if f.On(on) == a {
			return f, true
		}
	}
	return "", false
}

// IsFault reports whether the action is a fault.
func (a Action) IsFault() bool {
	_, ok := FaultOf(a)
	return ok
}

// NodeFaultNames lists the faults that strike a node.
func NodeFaultNames() string {
	var out []string
	for _, f := range allFaults {
		if f.Node() {
			out = append(out, string(f))
		}
	}
	return strings.Join(out, " and ")
}

// faultNames lists the fault kinds ParseFaults accepts; "pause" stands
// for the three pauses. The node faults need a target of several nodes.
var faultNames = func() []string {
	out := []string{"pause"}
	for _, f := range allFaults {
		out = append(out, string(f))
	}
	return out
}()

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
			for _, g := range allFaults {
				if g.On("").Kind == Pause {
					add(g)
				}
			}
		case slices.Contains(allFaults, Fault(f)):
			add(Fault(f))
		default:
			return nil, fmt.Errorf(
				"unknown fault %q (known: %s)", f, strings.Join(faultNames, ", "),
			)
		}
	}
	return out, nil
}
