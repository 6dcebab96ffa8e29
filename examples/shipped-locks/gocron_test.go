package shipped

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/explore/exploretest"
)

// oneRunner is the scheduler option under which gocron can be explored:
// its jobs run on one runner goroutine that lives as long as the
// scheduler.
var oneRunner = gocron.WithLimitConcurrentJobs(1, gocron.LimitModeReschedule)

// foundOnly fails the test unless res holds a reproduced resource
// violation whose message contains want, and no broken mutual exclusion.
func foundOnly(t *testing.T, res *explore.Result, want string) {
	t.Helper()
	found := false
	for _, c := range res.Counterexamples {
		switch c.Property {
		case explore.Resource:
			found = strings.Contains(c.Message, want)
			if !found {
				t.Errorf("resource broken by %q, want %q", c.Message, want)
			}
			if !c.Reproduced {
				t.Errorf("%q was not reproduced: %s", c.Message, c.ReplayNote)
			}
			t.Logf("found: %s\n%s", c.Message, c)
		case explore.MutualExclusion:
			t.Errorf("mutual exclusion broken: %s\n%s", c.Message, c)
		}
	}
	if !found {
		t.Errorf("%d schedules: %q not found", res.Schedules, want)
	}
}

// TestGocronOnePerTick: two gocron instances with the same job, each
// behind the redsync job locker with one try. The lock is held only
// while the job runs, so with no fault at all, and no lease running out,
// one tick runs twice: one instance's whole run, unlock included, comes
// before the other's timer fires (the splay gocron's Locker doc leaves to
// the locker).
func TestGocronOnePerTick(t *testing.T) {
	rdb := exploretest.Redis(t)
	res, err := exploretest.Explore(t, rdb,
		Gocron("gocron, one run per tick", GocronSetup{Runner: oneRunner, Check: onePerTick}),
		explore.Options{Workers: 1, NoFaults: true})
	if err != nil {
		t.Fatal(err)
	}
	foundOnly(t, res, "ran 2 times")
	if !res.Exhaustive || res.Diverged > 0 {
		t.Errorf("exhaustive %v, %d diverged; want an exhaustive search", res.Exhaustive,
			res.Diverged)
	}
	t.Logf("%d schedules, exhaustive %v, %d timers fired, %d diverged, from started %v",
		res.Schedules, res.Exhaustive, res.TimersFired, res.Diverged, res.FromStarted)
}

// TestGocronLostUpdate: a write of one instance's run that lands after
// the lease ran out (its instance paused, or the write slow on the
// network) comes after the other's run: the unfenced lost update, found
// and replayed. With -short the search stops there; else it goes
// through every schedule.
func TestGocronLostUpdate(t *testing.T) {
	rdb := exploretest.Redis(t)
	o := explore.Options{Workers: 1, FaultKinds: []explore.Fault{explore.PauseLong}}
	if testing.Short() {
		o.Stop = []explore.Property{explore.Resource}
	}
	start := time.Now()
	res, err := exploretest.Explore(t, rdb,
		Gocron("gocron, lost update", GocronSetup{Runner: oneRunner, Check: lostUpdate}), o)
	if err != nil {
		t.Fatal(err)
	}
	foundOnly(t, res, "lost update")
	if !testing.Short() && (!res.Exhaustive || res.Diverged > 0) {
		t.Errorf("exhaustive %v, %d diverged; want an exhaustive search", res.Exhaustive,
			res.Diverged)
	}
	t.Logf("%v: %d schedules, exhaustive %v, %d timers fired, %d diverged, from started %v",
		time.Since(start).Round(time.Second), res.Schedules, res.Exhaustive, res.TimersFired,
		res.Diverged, res.FromStarted)
}

// TestGocronAutoExtend: the locker's auto-extension, on a ticker every
// third of the lease, is explored (its extensions are counted), and
// mutual exclusion never breaks. The search runs until done or 150 s
// (skipped with -short: the extensions multiply the schedules), and says
// whether it found the lost update.
func TestGocronAutoExtend(t *testing.T) {
	if testing.Short() {
		t.Skip("a search of up to 150 s")
	}
	rdb := exploretest.Redis(t)
	var extends atomic.Int64
	setup := GocronSetup{Runner: oneRunner, Check: lostUpdate, Extend: true, Extends: &extends}
	res, err := exploretest.Explore(t, rdb, Gocron("gocron, auto-extended", setup),
		explore.Options{Workers: 1, FaultKinds: []explore.Fault{explore.PauseLong},
			Budget: 150 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Counterexamples {
		if c.Property == explore.MutualExclusion {
			t.Errorf("mutual exclusion broken: %s\n%s", c.Message, c)
		}
		t.Logf("found: %s (reproduced %v)", c.Message, c.Reproduced)
	}
	if extends.Load() == 0 || res.TimersFired == 0 {
		t.Errorf("%d extensions, %d timers fired: want the extensions explored",
			extends.Load(), res.TimersFired)
	}
	t.Logf("%d schedules, exhaustive %v, %d timers fired, %d extensions, %d diverged",
		res.Schedules, res.Exhaustive, res.TimersFired, extends.Load(), res.Diverged)
}

// TestGocronDefaultRefused: with gocron's default runner each run starts
// from a goroutine that has ended by then, so the explorer cannot trace
// it to a client, and refuses the search rather than let it through.
func TestGocronDefaultRefused(t *testing.T) {
	rdb := exploretest.Redis(t)
	_, err := exploretest.Explore(t, rdb,
		Gocron("gocron, default runner", GocronSetup{Check: onePerTick}),
		explore.Options{Workers: 1, NoFaults: true})
	if !errors.Is(err, explore.ErrOutside) {
		t.Fatalf("err = %v, want ErrOutside", err)
	}
	t.Log(err)
}
