package sched

import (
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
)

// TestRoundTripsCommuteByKey: two round trips of different clients
// commute unless one of them may write a key the other touches, whatever
// else each writes: two that each take a lock of their own and read the
// market commute; one that reads the market and one that writes it do
// not; a command on keys it does not name meets every write.
func TestRoundTripsCommuteByKey(t *testing.T) {
	step := func(client string, cmds ...string) Choice {
		var args [][]string
		for _, c := range cmds {
			args = append(args, strings.Fields(c))
		}
		keys, write := plumbing.FootprintOf(args)
		a := action.Action{Kind: action.Run, Client: client, Command: strings.Join(cmds, "; ")}
		return Choice{Action: a, keys: keys, write: write, written: plumbing.WrittenOf(args),
			p: &parked{}}
	}
	takeSword := step("A", "SET lock:sword a NX PX 10", "WATCH users:A", "ZSCORE market sword",
		"TYPE market")
	takeShield := step("C", "SET lock:shield c NX PX 10", "ZSCORE market shield",
		"TYPE market")
	for _, tc := range []struct {
		name string
		a, b Choice
		want bool
	}{
		{"two locks, both read the market", takeSword, takeShield, true},
		{"one lock taken twice", takeSword, step("B", "SET lock:sword b NX PX 10"), false},
		{"a read and a write of the market", takeShield,
			step("A", "MULTI", "ZREM market sword", "EXEC"), false},
		{"a WATCH and a write of its key", takeSword, step("B", "HINCRBY users:A funds 1"), false},
		{"two reads", step("A", "GET k"), step("B", "GET k"), true},
		{"unnamed keys and a write", step("A", "NOSUCH x"), step("B", "SET y 1"), false},
		{"unnamed keys and a read", step("A", "NOSUCH x"), step("B", "GET y"), false},
		{"two reads, unnamed keys", step("A", "GET x"), step("B", "GET y"), true},
		{"one client", step("A", "GET x"), step("A", "SET y 1"), false},
	} {
		if got := independent(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: independent = %v, want %v", tc.name, got, tc.want)
		}
		if got := independent(tc.b, tc.a); got != tc.want {
			t.Errorf("%s, swapped: independent = %v, want %v", tc.name, got, tc.want)
		}
	}
}
