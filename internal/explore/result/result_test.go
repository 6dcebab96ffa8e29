package result

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/testsupport/jsonkeys"
)

// TestResultJSON: a result's JSON has snake_case keys with units, the
// counterexample of the target's own property, and reads back to the
// same result.
func TestResultJSON(t *testing.T) {
	m := action.DefaultModel()
	m.Clients, m.TTLs = 3, []time.Duration{2 * time.Second, 3 * time.Second}
	other := Counterexample{
		Violation: Violation{Property: Liveness, Message: "C never got the lock", Step: 4},
		Actions: []action.Action{
			{Kind: action.Start, Client: "C"},
		},
		Steps:      []action.Step{{Action: action.Action{Kind: action.Start, Client: "C"}}},
		Reproduced: true,
		Server:     "7.0.15",
	}
	own := Counterexample{Violation: Violation{Property: Resource, Message: "sold twice", Step: 1},
		Actions: []action.Action{{Kind: action.Start, Client: "A"}, {Kind: action.Pause, Client: "A", Length: action.Short}},
		Steps: []action.Step{
			{Action: action.Action{Kind: action.Start, Client: "A"}, ClockMS: 0, Text: "A starts"},
		},
		Reproduced: true, Server: "7.0.15"}
	tests := []struct {
		name    string
		res     Result
		counter string // the counterexample's property, "" for none
	}{
		{
			"nothing found",
			Result{
				Target:      "recipe 6 (fixed)",
				Model:       m,
				Checked:     []string{Resource},
				Mode:        "exhaustive",
				Schedules:   12,
				Coverage:    1,
				Exhaustive:  true,
				Elapsed:     2 * time.Second,
				OwnProperty: Resource,
			},
			"",
		},
		{
			"its own property second",
			Result{Target: "recipe 6", Model: m, Checked: []string{Resource, Liveness},
				Mode: "random", Seed: 7, Schedules: 40, Pruned: 2, Coverage: 0.25,
				Stopped: StoppedBudget,
				Budget:  20 * time.Second, Elapsed: 21 * time.Second,
				Violations: []Counterexample{other, own}, OwnProperty: Resource,
				NodeCount: 3},
			Resource,
		},
		{"another property only", Result{Target: "recipe 6", Model: m, Mode: "exhaustive",
			Violations: []Counterexample{other}, OwnProperty: Resource}, Liveness},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(&tt.res)
			if err != nil {
				t.Fatal(err)
			}
			jsonkeys.Check(t, tt.name, b)
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{
				"schedules", "coverage", "exhaustive", "elapsed_s", "schedules_per_s",
				"dilation", "violations", "unsteady", "counterexample", "note"} {
				if _, ok := doc[k]; !ok {
					t.Errorf("no %q in %s", k, b)
				}
			}
			if ttl := doc["model"].(map[string]any)["ttl_ms"]; ttl != float64(10000) {
				t.Errorf("model.ttl_ms = %v, want 10000", ttl)
			}
			c, _ := doc["counterexample"].(map[string]any)
			switch {
			case tt.counter == "" && c != nil:
				t.Errorf("counterexample %v, want null", c)
			case tt.counter != "" && (c == nil || c["property"] != tt.counter):
				t.Errorf("counterexample %v, want %s", c, tt.counter)
			}
			if tt.res.NodeCount > 0 && !strings.Contains(doc["note"].(string), "nodes") {
				t.Errorf("note of a target of nodes: %v", doc["note"])
			}
			var back Result
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(&back)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(b) {
				t.Errorf("read back and written again:\n got %s\nwant %s", again, b)
			}
			if back.Budget != tt.res.Budget || back.Elapsed != tt.res.Elapsed ||
				!reflect.DeepEqual(back.Model.TTLs, tt.res.Model.TTLs) {
				t.Errorf(
					"read back: budget %v elapsed %v ttls %v", back.Budget, back.Elapsed,
					back.Model.TTLs,
				)
			}
		})
	}
}
