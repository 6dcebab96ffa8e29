package gallery_test

import (
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	tl "github.com/lockmarket/lockmarket/internal/timeline"
)

// Lanes of the scenarios.
const (
	a, b, c, d     = "A ann", "B bob", "C cat", "D dan"
	r1, r2, writer = "reader 1", "reader 2", "writer"
)

// The characteristic steps of each recipe's flawed run and of its fix, in
// the order they must happen.
var characteristic = map[string]struct{ flawed, fixed []tl.Pattern }{
	"1": {
		flawed: []tl.Pattern{
			{Client: a, Kind: tl.Command, Detail: "GET lock:item:relic.sam"},
			{Client: a, Kind: tl.PauseStart, Detail: "between its GET"},
			{Client: b, Kind: tl.Acquire, Detail: "holds lock:item:relic.sam", Clean: true},
			{Client: a, Kind: tl.Acquire, Violation: true, Detail: "holds lock:item:relic.sam"},
			{Client: a, Kind: tl.Commit, Detail: "relic into ann's inventory"},
			{Client: b, Kind: tl.Commit, Violation: true, Detail: "relic into bob's inventory"},
			{Kind: tl.Finding, Violation: true, Detail: "sold 2 times"},
		},
		fixed: []tl.Pattern{
			{Client: a, Kind: tl.Acquire, Detail: "NX"},
			{Client: a, Kind: tl.PauseStart},
			{Client: b, Kind: tl.AcquireFailed, Detail: "held by A ann"},
			{Client: b, Kind: tl.Result, Detail: "gave up"},
			{Client: a, Kind: tl.Commit, Clean: true},
			{Kind: tl.Finding, Clean: true, Detail: "no violation"},
		},
	},
	"2": {
		flawed: []tl.Pattern{
			{Client: d, Kind: tl.Acquire, Detail: "no expiry"},
			{Client: d, Kind: tl.Crash, Violation: true},
			{Client: a, Kind: tl.AcquireFailed, Detail: "held by D dan"},
			{Client: a, Kind: tl.Result, Detail: "gave up"},
			{Client: c, Kind: tl.Result, Detail: "gave up"},
			{Kind: tl.Finding, Violation: true, Detail: "blocked"},
		},
		fixed: []tl.Pattern{
			{Client: d, Kind: tl.Acquire, Detail: "lease 10s"},
			{Client: d, Kind: tl.Crash, Clean: true},
			{Client: d, Kind: tl.LeaseExpired},
			{Client: a, Kind: tl.Acquire},
			{Client: a, Kind: tl.Commit, Clean: true},
			{Client: c, Kind: tl.Commit, Clean: true},
		},
	},
	"3": {
		flawed: []tl.Pattern{
			{Client: d, Kind: tl.Acquire, Detail: "SET NX → holds lock:market: (token"},
			{Client: d, Kind: tl.Crash, Violation: true, Detail: "between SETNX and EXPIRE"},
			{Client: a, Kind: tl.AcquireFailed},
			{Client: b, Kind: tl.Result, Detail: "gave up"},
			{Kind: tl.Finding, Violation: true, Detail: "no expiry"},
		},
		fixed: []tl.Pattern{
			{Client: d, Kind: tl.Crash, Clean: true},
			{Client: d, Kind: tl.LeaseExpired},
			{Client: b, Kind: tl.Commit, Clean: true},
		},
	},
	"4": {
		flawed: []tl.Pattern{
			{Client: a, Kind: tl.Acquire},
			{Client: a, Kind: tl.Commit, Detail: "ring into ann's inventory", Clean: true},
			{Client: a, Kind: tl.PauseStart, Detail: "before its release"},
			{Client: a, Kind: tl.LeaseExpired},
			{Client: b, Kind: tl.Acquire, Clean: true},
			{Client: a, Kind: tl.Release, Violation: true, Detail: "which B bob holds"},
			{Client: c, Kind: tl.Acquire, Violation: true, Detail: "holds lock:market:"},
			{Client: c, Kind: tl.Commit, Detail: "crown into cat's inventory"},
			{Client: b, Kind: tl.Commit, Violation: true, Detail: "crown into bob's inventory"},
			{Kind: tl.Finding, Violation: true, Detail: "crown sold 2 times"},
		},
		fixed: []tl.Pattern{
			{Client: a, Kind: tl.LeaseExpired},
			{Client: b, Kind: tl.Acquire},
			{Client: a, Kind: tl.Release, Clean: true, Detail: "not ours any more"},
			{Client: c, Kind: tl.AcquireFailed, Detail: "held by B bob"},
			{Client: c, Kind: tl.Result, Detail: "gave up"},
			{Client: b, Kind: tl.Commit, Clean: true, Detail: "crown into bob's inventory"},
		},
	},
	"5": {
		flawed: []tl.Pattern{
			{Client: a, Kind: tl.Command, Detail: "GET lock:market:"},
			{Client: a, Kind: tl.PauseStart, Detail: "between its compare"},
			{Client: a, Kind: tl.LeaseExpired},
			{Client: b, Kind: tl.Acquire, Clean: true},
			{Client: a, Kind: tl.Release, Violation: true, Detail: "which B bob holds"},
			{Client: c, Kind: tl.Acquire, Violation: true},
			{Client: b, Kind: tl.Commit, Violation: true},
			{Kind: tl.Finding, Violation: true, Detail: "crown sold 2 times"},
		},
		fixed: []tl.Pattern{
			{Client: a, Kind: tl.Release, Clean: true, Detail: "not ours any more"},
			{Client: c, Kind: tl.Result, Detail: "gave up"},
			{Client: b, Kind: tl.Commit, Clean: true},
		},
	},
	"6": {
		flawed: []tl.Pattern{
			{Client: a, Kind: tl.Acquire, Detail: "lease 10s"},
			{Client: a, Kind: tl.PauseStart, Detail: "before its commit"},
			{Client: a, Kind: tl.LeaseExpired},
			{Client: b, Kind: tl.Acquire, Clean: true},
			{Client: b, Kind: tl.Commit, Clean: true, Detail: "idol into bob's inventory"},
			{Client: a, Kind: tl.PauseEnd},
			{Client: a, Kind: tl.Commit, Violation: true, Detail: "idol into ann's inventory"},
			{Kind: tl.Finding, Violation: true, Detail: "idol sold 2 times"},
		},
		fixed: []tl.Pattern{
			{Client: a, Kind: tl.Command, Detail: "WATCH users:ann lock:item:idol.sam"},
			{Client: a, Kind: tl.PauseStart},
			{Client: a, Kind: tl.LeaseExpired},
			{Client: b, Kind: tl.Commit, Clean: true},
			{Client: a, Kind: tl.CommitRefused, Detail: "EXEC aborted"},
			{Client: a, Kind: tl.Result, Detail: "lock was lost"},
			{Kind: tl.Finding, Clean: true, Detail: "no violation"},
		},
	},
	"9": {
		flawed: []tl.Pattern{
			{Client: r1, Kind: tl.Acquire},
			{Client: r2, Kind: tl.Acquire},
			{Client: r2, Kind: tl.Release},
			{Client: writer, Kind: tl.Acquire, Violation: true},
			{Client: writer, Kind: tl.Commit},
			{Client: r1, Kind: tl.Result, Violation: true, Detail: "1100"},
		},
		fixed: []tl.Pattern{
			{Client: r2, Kind: tl.Release},
			{Client: writer, Kind: tl.AcquireFailed},
			{Client: r1, Kind: tl.Result, Clean: true, Detail: "= 1000"},
			{Client: r1, Kind: tl.Release},
			{Client: writer, Kind: tl.Acquire, Clean: true},
			{Client: writer, Kind: tl.Commit},
		},
	},
	"11": {
		flawed: []tl.Pattern{
			{Client: a, Kind: tl.Acquire, Detail: "SET NX → holds lock:item:idol.sam (token"},
			{Client: a, Kind: tl.LeaseStart, Detail: "EXPIRE"},
			{Client: a, Kind: tl.PauseStart},
			{Client: a, Kind: tl.LeaseExpired},
			{Client: b, Kind: tl.Commit, Clean: true},
			{Client: a, Kind: tl.Commit, Violation: true},
			{Kind: tl.Finding, Violation: true, Detail: "idol sold 2 times"},
		},
		fixed: []tl.Pattern{
			{Client: a, Kind: tl.LeaseExpired},
			{Client: b, Kind: tl.Commit, Clean: true},
			{Client: a, Kind: tl.CommitRefused},
			{Client: a, Kind: tl.Result, Detail: "lock was lost"},
		},
	},
}

// checkTimelines checks that row's recorded timelines hold its recipe's
// characteristic steps in order, with the unsafe ones marked in the flawed
// run and none marked in the fix.
func checkTimelines(t *testing.T, row gallery.Row) {
	t.Helper()
	want, ok := characteristic[row.Recipe.ID]
	if !ok {
		t.Fatalf("no characteristic steps for recipe %s", row.Recipe)
	}
	check := func(timeline tl.Timeline, steps []tl.Pattern) {
		t.Helper()
		if k := timeline.Follow(steps...); k >= 0 {
			var out strings.Builder
			timeline.Text(&out, 100, true)
			t.Fatalf("%s: step %d (%v) not found in order:\n%s", timeline.Variant, k, steps[k], out.String())
		}
	}
	check(row.Timeline, want.flawed)
	check(row.FixedTimeline, want.fixed)
	if len(row.Timeline.Marked()) == 0 || row.Timeline.Violations != row.Violations {
		t.Errorf("flawed: %d marked steps, %d violations (row %d)", len(row.Timeline.Marked()),
			row.Timeline.Violations, row.Violations)
	}
	if m := row.FixedTimeline.Marked(); len(m) != 0 {
		t.Errorf("fixed run marks %v", m)
	}
}
