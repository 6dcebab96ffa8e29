package exploretest

import (
	"context"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/explore"
)

// TestCheckRunsInBubbles checks that Check takes Explore's path: clients
// that wait on a time.Sleep, which explore.Check alone would run on the
// wall clock, run in bubbles of the test, where their sleeps end on the
// virtual clock as steps of the schedules (timers fired), and Check and
// Explore count the same schedules and timers.
func TestCheckRunsInBubbles(t *testing.T) {
	rdb := Redis(t)
	target := &explore.Target{
		Name: "sleeps, then counts",
		Client: func(ctx context.Context, c *explore.Client) error {
			time.Sleep(10 * time.Millisecond)
			return c.Redis().Incr(ctx, c.Key("n")).Err()
		},
	}
	o := explore.Options{Workers: 1, NoFaults: true}
	checked := Check(t, rdb, target, o)
	explored, err := Explore(t, rdb, target, o)
	if err != nil {
		t.Fatal(err)
	}
	if checked.TimersFired == 0 {
		t.Errorf("Check: %d schedules, no timer fired: its clients ran outside bubbles",
			checked.Schedules)
	}
	if !checked.Exhaustive || checked.Diverged > 0 {
		t.Errorf("Check: exhaustive %v, %d diverged", checked.Exhaustive, checked.Diverged)
	}
	if checked.Schedules != explored.Schedules || checked.TimersFired != explored.TimersFired {
		t.Errorf("Check: %d schedules, %d timers fired; Explore: %d, %d", checked.Schedules,
			checked.TimersFired, explored.Schedules, explored.TimersFired)
	}
	t.Logf("%d schedules, %d timers fired", checked.Schedules, checked.TimersFired)
}
