package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/failure/faults"
	"github.com/lockmarket/lockmarket/internal/timeline"
	"github.com/redis/go-redis/v9"
)

var update = flag.Bool("update", false, "write pause_schedules.json again")

// TestPauseSchedules checks that the schedules the lab keeps
// (pause_schedules.json) are those pausePlan finds on each target of the
// pause, and plays each strategy (below). When the explorer's choices or
// its words for a step change (the table of commands of package rediscmd,
// say), write the file again and read its diff:
//
//	go test ./internal/service/lab/ -run TestPauseSchedules -update
func TestPauseSchedules(t *testing.T) {
	mini := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mini.Addr(), PoolSize: 2})
	defer rdb.Close()
	found := map[string][]action.Action{}
	for _, v := range faults.Pause.Variants() {
		target, err := pauseTarget(v)
		if err != nil {
			t.Fatal(err)
		}
		m := action.DefaultModel()
		m.Clients, m.TTL = 2, pauseLease
		e, err := sched.NewExplorer(context.Background(), rdb, target, m)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pausePlan(context.Background(), e)
		e.Close()
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		found[target.Name] = plan
	}
	doc, err := json.MarshalIndent(found, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	doc = append(doc, '\n')
	if *update {
		if err := os.WriteFile("pause_schedules.json", doc, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(doc, pauseSchedules) {
		t.Errorf("pause_schedules.json is not what pausePlan finds (-update writes it again):\n%s", doc)
	}
	t.Run("lessons", testPauseLessons)
}

// testPauseLessons plays the pause fault under every strategy the lab
// offers, twice: each shows its lesson (the unfenced lease locks, and the
// watchdog frozen with its process, sell the sword twice or lose the
// counter's update; the fenced locks refuse A's late commit; WATCH and the
// script find the sword sold), and the two runs' timelines are the same
// JSON, byte for byte: the schedule, not the machine, decides.
func testPauseLessons(t *testing.T) {
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
