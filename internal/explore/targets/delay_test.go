package targets_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/race"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestMaxDelay: the watchdog keeps the resource under short pauses when
// every command lands within a second, and loses it when a write may
// stay in flight past its lease (the default, unbounded delays).
func TestMaxDelay(t *testing.T) {
	b := redistest.Real(t)
	m := action.DefaultModel()
	m.FaultKinds = []action.Fault{action.FaultPauseShort, action.FaultCrash}
	m.MaxDelay = time.Second
	res, broken := search(t, b.Client, targets.Watchdog(false), m, sched.Options{})
	if len(broken) > 0 || !res.Exhaustive || res.Schedules == 0 {
		t.Errorf(
			"watchdog, delays within 1s: broken %v, exhaustive %v, %d schedules; want nothing "+
				"broken, exhaustively",
			broken, res.Exhaustive, res.Schedules,
		)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back result.Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Model.MaxDelay != time.Second {
		t.Errorf("max_delay_ms read back as %v, want 1s", back.Model.MaxDelay)
	}
	if race.Enabled || testing.Short() {
		return // 3,000 schedules to the violation: the full run without -race has them
	}
	m.MaxDelay = 0
	_, broken = search(t, b.Client, targets.Watchdog(false), m, sched.Options{StopAtFirst: true})
	if !slices.Equal(broken, []string{result.Resource}) {
		t.Errorf(
			"watchdog, delays unbounded: broken %v, want resource (a write in flight past the "+
				"lease)",
			broken,
		)
	}
}
