package sched

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
)

// TestFaultTable checks the one table of faults against the vocabulary
// the CLI and saved counterexamples use: each fault's -faults name, its
// action's JSON, its description, and what it commutes with.
func TestFaultTable(t *testing.T) {
	for _, tc := range []struct {
		name       action.Fault
		json, text string
	}{
		{action.FaultPauseShort, `{"kind":"pause","client":"A","length":"short"}`, "A paused (short)"},
		{action.FaultPauseLong, `{"kind":"pause","client":"A","length":"long"}`, "A paused (long)"},
		{action.FaultPauseForever, `{"kind":"pause","client":"A","length":"forever"}`, "A paused " +
			"(forever)"},
		{action.FaultCrash, `{"kind":"crash","client":"A"}`, "A crashes"},
		{action.FaultNodeRestart, `{"kind":"restart","node":"n1"}`, "n1 restarts empty"},
		{action.FaultClockJump, `{"kind":"jump","node":"n1"}`, "n1's clock jumps"},
	} {
		if faultNamed(tc.name) == nil {
			t.Errorf("%s: not in the table", tc.name)
			continue
		}
		on := "A"
		if tc.name.Node() {
			on = "n1"
		}
		a := tc.name.On(on)
		b, err := json.Marshal(a)
		if err != nil || string(b) != tc.json {
			t.Errorf("%s: JSON %s (%v), want %s", tc.name, b, err, tc.json)
		}
		var back action.Action
		if err := json.Unmarshal(b, &back); err != nil || !back.IsFault() || back != a {
			t.Errorf("%s: read back as %+v, not the same fault", tc.name, back)
		}
		if a.String() != tc.text {
			t.Errorf("%s: %q, want %q", tc.name, a.String(), tc.text)
		}
		if !slices.Contains(action.FaultNames(), string(tc.name)) {
			t.Errorf("%s: not in FaultNames() %v", tc.name, action.FaultNames())
		}
		if got, err := action.ParseFaults(string(tc.name)); err != nil || !slices.Equal(got, []action.Fault{tc.name}) {
			t.Errorf("ParseFaults(%q) = %v, %v", tc.name, got, err)
		}
	}
	if got, err := action.ParseFaults(" pause, crash,pause-short,none"); err != nil ||
		!slices.Equal(
			got,
			[]action.Fault{action.FaultPauseShort, action.FaultPauseLong, action.FaultPauseForever, action.FaultCrash},
		) {
		t.Errorf("pause and crash: %v, %v", got, err)
	}
	if _, err := action.ParseFaults("pause,earthquake"); err == nil {
		t.Error("an unknown fault parsed")
	}
	for _, a := range []action.Action{
		{Kind: action.Run, Client: "A"}, {Kind: action.Tick, Client: "A"}, {Kind: action.Start, Client: "A"},
	} {
		if a.IsFault() {
			t.Errorf("%v is a fault", a)
		}
	}
	m := action.DefaultModel()
	if d, ok := m.PauseLength(action.Short); !ok || d != m.TTL/2 {
		t.Errorf("a short pause lasts %v, want half the lease", d)
	}
	if d, ok := m.PauseLength(action.Forever); !ok || d != -1 {
		t.Errorf("a pause for good lasts %v, want -1", d)
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
