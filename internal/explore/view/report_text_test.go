package view

import (
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/report/output"
)

// TestCoverText: a coverage says 100% only when it is the whole tree,
// and more than 0% when it is any of it.
func TestCoverText(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{{1, "100%"}, {0.9999, ">99.9%"}, {0.5, "50.0%"}, {0.00001, "<0.1%"}, {0, "0.0%"}}
	for _, tt := range tests {
		if got := coverText(tt.f); got != tt.want {
			t.Errorf("coverText(%v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}

// TestWriteFindings: the findings name each violation, the unsteady ones
// with their schedule, and the counterexample with its steps and how its
// replay went, when there is no timeline to show.
func TestWriteFindings(t *testing.T) {
	steps := []action.Step{
		{Action: action.Action{Kind: action.Start, Client: "A"}, Text: "A starts"},
		{
			Action:    action.Action{Kind: action.Run, Client: "B"},
			ClockMS:   5000,
			Text:      "SET lock",
			Violation: result.MutualExclusion,
		}}
	broken := result.Counterexample{
		Violation: result.Violation{
			Property: result.MutualExclusion, Message: "A and B hold the lock",
		},
		Steps: steps,
		Actions: []action.Action{
			{Kind: action.Start, Client: "A"},
		},
		ReplayNote: "the replay did not break mutual_exclusion",
	}
	unsteady := broken
	unsteady.Property = result.Resource
	tests := []struct {
		name string
		res  result.Result
		want []string
	}{
		{
			"nothing, cut short",
			result.Result{Checked: []string{result.Resource}, Stopped: result.StoppedBudget},
			[]string{"No violation of resource found before the search was cut short."},
		},
		{
			"a violation not reproduced",
			result.Result{
				Checked:    []string{result.MutualExclusion},
				Violations: []result.Counterexample{broken},
			},
			[]string{"violations:\nmutual_exclusion: A and B hold the lock (2 steps)",
				"counterexample (mutual_exclusion, 2 steps; NOT reproduced on a fresh " +
					"redis-server: the replay did\nnot",
				"  2  t=5s      B: SET lock  !! mutual_exclusion"},
		},
		{
			"unsteady",
			result.Result{
				Checked:  []string{result.Resource},
				Unsteady: []result.Counterexample{unsteady},
			},
			[]string{
				"No violation of resource.",
				"resource: A and B hold the lock (2 steps; the replay did not",
				"schedule: A starts",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteFindings(&b, &tt.res, false); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("no %q in\n%s", w, b.String())
				}
			}
		})
	}
}

// TestWriteFindingsWidth: with every property checked, the line that
// says none was broken fits the report's width, whether or not the
// search was cut short.
func TestWriteFindingsWidth(t *testing.T) {
	for _, stopped := range []string{"", result.StoppedBudget} {
		var b strings.Builder
		res := &result.Result{Checked: result.Properties(), Stopped: stopped}
		if err := WriteFindings(&b, res, false); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(b.String(), "\n") {
			if n := len([]rune(l)); n > output.Width {
				t.Errorf(
					"stopped %q: a line of %d columns, more than %d: %q", stopped, n, output.Width,
					l,
				)
			}
		}
	}
}
