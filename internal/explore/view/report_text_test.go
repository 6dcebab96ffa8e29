package view

import (
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
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
	steps := []action.Step{{Action: action.Action{Kind: action.Start, Client: "A"}, Text: "A starts"},
		{
			Action:    action.Action{Kind: action.Run, Client: "B"},
			ClockMS:   5000,
			Text:      "SET lock",
			Violation: sched.MutualExclusion,
		}}
	broken := sched.Counterexample{
		Violation: sched.Violation{
			Property: sched.MutualExclusion, Message: "A and B hold the lock",
		},
		Steps: steps,
		Actions: []action.Action{
			{Kind: action.Start, Client: "A"},
		},
		ReplayNote: "the replay did not break mutual_exclusion",
	}
	unsteady := broken
	unsteady.Property = sched.Resource
	tests := []struct {
		name string
		res  sched.Result
		want []string
	}{
		{
			"nothing, cut short",
			sched.Result{Checked: []string{sched.Resource}, Stopped: sched.StoppedBudget},
			[]string{"No violation of resource found before the search was cut short."},
		},
		{
			"a violation not reproduced",
			sched.Result{
				Checked:    []string{sched.MutualExclusion},
				Violations: []sched.Counterexample{broken},
			},
			[]string{"violations:\nmutual_exclusion: A and B hold the lock (2 steps)",
				"counterexample (mutual_exclusion, 2 steps; NOT reproduced on a fresh " +
					"redis-server: the replay did\nnot",
				"  2  t=5s      B: SET lock  !! mutual_exclusion"},
		},
		{
			"unsteady",
			sched.Result{
				Checked:  []string{sched.Resource},
				Unsteady: []sched.Counterexample{unsteady},
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
	for _, stopped := range []string{"", sched.StoppedBudget} {
		var b strings.Builder
		res := &sched.Result{Checked: sched.Properties(), Stopped: stopped}
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
