package sched

import (
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
)

// TestFaultTable checks that the runtime strikes every fault a model may
// allow: each has its entry in faults, found from its action.
func TestFaultTable(t *testing.T) {
	for _, name := range action.FaultNames() {
		f := action.Fault(name)
		if name == "pause" {
			continue
		}
		on := "A"
		if f.Node() {
			on = "n1"
		}
		if got := faultOf(f.On(on)); got == nil || got.name != f {
			t.Errorf("%s: not struck by its entry of faults (%v)", f, got)
		}
	}
	if faultOf(action.Action{Kind: action.Run, Client: "A"}) != nil {
		t.Error("a command is struck as a fault")
	}
}

// TestFaultsCommute checks the independence of faults with the other
// actions.
func TestFaultsCommute(t *testing.T) {
	pauseA := Choice{Action: action.Action{Kind: action.Pause, Client: "A", Length: action.Short}}
	crashB := Choice{Action: action.Action{Kind: action.Crash, Client: "B"}}
	restart1 := Choice{Action: action.Action{Kind: action.Restart, Node: "n1"}}
	jump2 := Choice{Action: action.Action{Kind: action.Jump, Node: "n2"}}
	runA := Choice{Action: action.Action{Kind: action.Run, Client: "A", Command: "GET x"}, keys: []string{"x"}}
	runB1 := Choice{
		Action: action.Action{Kind: action.Run, Client: "B", Command: "n1 SET lock:L"},
		keys:   []string{"lock:L@n1"},
		write:  true,
	}
	runB2 := Choice{
		Action: action.Action{Kind: action.Run, Client: "B", Command: "n2 SET lock:L"},
		keys:   []string{"lock:L@n2"},
		write:  true,
	}
	tick := Choice{Action: action.Action{Kind: action.Tick, Client: "B", At: 10 * time.Millisecond}}
	startB := Choice{Action: action.Action{Kind: action.Start, Client: "B"}}
	for _, tc := range []struct {
		a, b Choice
		want bool
	}{
		{pauseA, runA, false},
		{pauseA, runB1, true},
		{pauseA, startB, true},
		{pauseA, crashB, true},
		{pauseA, tick, false},
		{pauseA, restart1, true},
		{restart1, runB1, false},
		{restart1, runB2, true},
		{restart1, runA, true},
		{restart1, jump2, true},
		{restart1, restart1, false},
		{restart1, tick, false},
		{jump2, runB2, false},
	} {
		if got := independent(tc.a, tc.b); got != tc.want {
			t.Errorf("%v and %v: independent %v, want %v", tc.a.Action, tc.b.Action, got, tc.want)
		}
		if got := independent(tc.b, tc.a); got != tc.want {
			t.Errorf("%v and %v: independent %v, want %v", tc.b.Action, tc.a.Action, got, tc.want)
		}
	}
}
