package sched

import (
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
)

// TestNodeIndependence: commands to two nodes commute, even of one client
// (its goroutines send them in parallel); a node fault commutes with what
// touches no key on its node, and never with a tick.
func TestNodeIndependence(t *testing.T) {
	cmd := func(client, node string, keys ...string) Choice {
		a := action.Action{Kind: action.Run, Client: client, Command: node + " SET"}
		return Choice{Action: a,
			keys: plumbing.OnNode(node, keys), write: true, p: &parked{node: node}}
	}
	fault := func(kind, node string) Choice {
		return Choice{Action: action.Action{Kind: kind, Node: node}}
	}
	server := Choice{
		Action: action.Action{Kind: action.Run, Client: "A", Command: "SET counter"},
		keys:   []string{"counter"},
		write:  true,
		p:      &parked{},
	}
	for _, tc := range []struct {
		name string
		a, b Choice
		want bool
	}{
		{"one client, two nodes", cmd("A", "n1", "lock"), cmd("A", "n2", "lock"), true},
		{"one client, one node", cmd("A", "n1", "lock"), cmd("A", "n1", "other"), false},
		{"two clients, one key on two nodes", cmd("A", "n1", "lock"), cmd("B", "n2", "lock"), true},
		{"two clients, one key on one node", cmd("A", "n1", "lock"), cmd("B", "n1", "lock"), false},
		{"one client, a node and the server", cmd("A", "n1", "lock"), server, false},
		{"another client, a node and the server", cmd("B", "n1", "lock"), server, true},
		{"restart and a command on its node", fault(action.Restart, "n1"), cmd("A", "n1", "lock"), false},
		{"restart and a command elsewhere", fault(action.Restart, "n1"), cmd("A", "n2", "lock"), true},
		{"jump and a command on unknown keys", fault(action.Jump, "n1"), cmd("A", "n2", "*"),
			false},
		{"jump and the server", server, fault(action.Jump, "n1"), true},
		{"jump and a tick", fault(action.Jump, "n1"), Choice{Action: action.Action{Kind: action.Tick, At: 10}}, false},
		{"faults of two nodes", fault(action.Restart, "n1"), fault(action.Jump, "n2"), true},
		{"faults of one node", fault(action.Restart, "n1"), fault(action.Jump, "n1"), false},
		{"a node fault and a " +
			"pause", fault(action.Restart, "n1"),
			Choice{Action: action.Action{Kind: action.Pause, Client: "A", Length: action.Long}},
			true},
	} {
		if got, back := independent(tc.a, tc.b), independent(tc.b, tc.a); got != tc.want ||
			back != tc.want {
			t.Errorf("%s: independent %v, %v; want %v", tc.name, got, back, tc.want)
		}
	}
	for _, k := range []string{"{ns}:lock:L", "x@n", "a@nb"} {
		key, node := plumbing.SplitNode(plumbing.OnNode("n3", []string{k})[0])
		if key != k || node != "n3" {
			t.Errorf("SplitNode(OnNode(%q)) = %q, %q", k, key, node)
		}
		if key, node := plumbing.SplitNode(k); key != k || node != "" {
			t.Errorf("splitNode(%q) = %q, %q; want it unqualified", k, key, node)
		}
	}
}
