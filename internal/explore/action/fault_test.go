package action

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestFaults checks the faults against the vocabulary the CLI and saved
// counterexamples use: each fault's -faults name, its action's JSON and
// its description.
func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name       Fault
		json, text string
	}{
		{FaultPauseShort, `{"kind":"pause","client":"A","length":"short"}`, "A paused (short)"},
		{FaultPauseLong, `{"kind":"pause","client":"A","length":"long"}`, "A paused (long)"},
		{FaultPauseForever, `{"kind":"pause","client":"A","length":"forever"}`,
			"A paused (forever)"},
		{FaultCrash, `{"kind":"crash","client":"A"}`, "A crashes"},
		{FaultNodeRestart, `{"kind":"restart","node":"n1"}`, "n1 restarts empty"},
		{FaultClockJump, `{"kind":"jump","node":"n1"}`, "n1's clock jumps"},
	} {
		on := "A"
		if tc.name.Node() {
			on = "n1"
		}
		a := tc.name.On(on)
		b, err := json.Marshal(a)
		if err != nil || string(b) != tc.json {
			t.Errorf("%s: JSON %s (%v), want %s", tc.name, b, err, tc.json)
		}
		var back Action
		if err := json.Unmarshal(b, &back); err != nil || back != a {
			t.Errorf("%s: read back as %+v, not the same action", tc.name, back)
		}
		if f, ok := FaultOf(back); !ok || f != tc.name || !back.IsFault() {
			t.Errorf("%s: read back as the fault %q (%v)", tc.name, f, ok)
		}
		if a.String() != tc.text {
			t.Errorf("%s: %q, want %q", tc.name, a.String(), tc.text)
		}
		if !slices.Contains(FaultNames(), string(tc.name)) {
			t.Errorf("%s: not in FaultNames() %v", tc.name, FaultNames())
		}
		got, err := ParseFaults(string(tc.name))
		if err != nil || !slices.Equal(got, []Fault{tc.name}) {
			t.Errorf("ParseFaults(%q) = %v, %v", tc.name, got, err)
		}
	}
	got, err := ParseFaults(" pause, crash,pause-short,none")
	want := []Fault{FaultPauseShort, FaultPauseLong, FaultPauseForever, FaultCrash}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("pause and crash: %v, %v", got, err)
	}
	if _, err := ParseFaults("pause,earthquake"); err == nil {
		t.Error("an unknown fault parsed")
	}
	for _, a := range []Action{
		{Kind: Run, Client: "A"}, {Kind: Tick, Client: "A"}, {Kind: Start, Client: "A"},
	} {
		if a.IsFault() {
			t.Errorf("%v is a fault", a)
		}
	}
}

// TestPauseLength checks how long each pause lasts under the model.
func TestPauseLength(t *testing.T) {
	m := DefaultModel()
	for _, tc := range []struct {
		length string
		want   time.Duration
		ok     bool
	}{
		{Short, m.TTL / 2, true},
		{Long, m.TTL * 3 / 2, true},
		{Forever, -1, true},
		{"never", 0, false},
	} {
		if d, ok := m.PauseLength(tc.length); d != tc.want || ok != tc.ok {
			t.Errorf("%s: %v, %v; want %v, %v", tc.length, d, ok, tc.want, tc.ok)
		}
	}
}
