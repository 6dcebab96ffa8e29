package lab

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/failure/faults"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

// TestPauseSchedules plays the pause fault under every strategy the lab
// offers, twice: each shows its lesson (the unfenced lease locks, and the
// watchdog frozen with its process, sell the sword twice or lose the
// counter's update; the fenced locks refuse A's late commit; WATCH and the
// script find the sword sold), and the two runs' timelines are the same
// JSON, byte for byte: the schedule, not the machine, decides.
func TestPauseSchedules(t *testing.T) {
	t.Parallel() // embedded servers of its own
	refused := []timeline.Pattern{
		{Client: "A", Kind: timeline.PauseStart},
		{Kind: timeline.LeaseExpired},
		{Client: "B", Kind: timeline.Commit, Clean: true},
		{Client: "A", Kind: timeline.CommitRefused},
	}
	soldTwice := []timeline.Pattern{
		{Client: "A", Kind: timeline.Acquire},
		{Client: "A", Kind: timeline.PauseStart},
		{Kind: timeline.LeaseExpired},
		{Client: "B", Kind: timeline.Acquire, Clean: true},
		{Client: "B", Kind: timeline.Commit, Clean: true},
		{Client: "A", Kind: timeline.Commit, Violation: true},
		{Kind: timeline.Finding, Violation: true, Detail: "sword was sold twice"},
	}
	// later is A's commit, after B's, finding the sword gone: the steps
	// on anything but a lock are one result each.
	later := func(b, a string) []timeline.Pattern {
		return []timeline.Pattern{
			{Client: "A", Kind: timeline.PauseStart},
			{Client: "B", Kind: timeline.Result, Detail: b},
			{Client: "A", Kind: timeline.Result, Detail: a},
			{Kind: timeline.Finding, Clean: true, Detail: "no violation"},
		}
	}
	cases := map[faults.Variant][]timeline.Pattern{
		"watch":          later("EXEC → QUEUED", "EXEC → error: aborted"),
		"lua":            later("→ ok", "→ listing_not_found"),
		"coarse":         soldTwice,
		"coarse+fencing": refused,
		"fine":           soldTwice,
		"fine+fencing":   refused,
		"fine+watchdog": {
			{Client: "A", Kind: timeline.PauseStart},
			{Kind: timeline.LeaseExpired},
			{Client: "B", Kind: timeline.Acquire, Clean: true},
			{Kind: timeline.Finding, Violation: true, Detail: "lost update"},
		},
	}
	for _, v := range faults.Pause.Variants() {
		t.Run(string(v), func(t *testing.T) {
			want, ok := cases[v]
			if !ok {
				t.Fatalf("no lesson written for %s", v)
			}
			var docs []string
			for range 2 {
				tl, err := runPause(context.Background(), v)
				if err != nil {
					t.Fatal(err)
				}
				if k := tl.Follow(want...); k >= 0 {
					var out strings.Builder
					tl.Text(&out, 100, true)
					t.Fatalf("step %d (%v) not found in order:\n%s", k, want[k], out.String())
				}
				broken := labFix(v) != ""
				if (tl.Violations > 0) != broken || strings.HasPrefix(tl.Verdict, "Broken") != broken {
					t.Errorf("%d violations, %q; want broken %v", tl.Violations, tl.Verdict, broken)
				}
				doc, err := json.Marshal(struct {
					T timeline.Timeline
					S any
				}{tl, steps(tl)})
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(doc))
			}
			if docs[0] != docs[1] {
				t.Errorf("two runs differ:\n%s\n%s", docs[0], docs[1])
			}
		})
	}
}
