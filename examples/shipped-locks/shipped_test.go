package shipped

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/explore/exploretest"
)

// lostUpdateFound fails the test unless res holds the lost update
// (Resource), reproduced on a fresh server, and no broken mutual
// exclusion.
func lostUpdateFound(t *testing.T, res *explore.Result) {
	t.Helper()
	found := false
	for _, c := range res.Counterexamples {
		switch c.Property {
		case explore.Resource:
			found = true
			if !c.Reproduced {
				t.Errorf("the lost update was not reproduced: %s", c.ReplayNote)
			}
			t.Logf("found: %s\n%s", c.Message, c)
		case explore.MutualExclusion:
			t.Errorf("mutual exclusion broken: %s\n%s", c.Message, c)
		}
	}
	if !found {
		t.Errorf("%d schedules: no lost update found", res.Schedules)
	}
}

// TestRedsyncLockContext: redsync's LockContext with one try sends each
// command from a goroutine it starts; the explorer holds them as the
// client's, searches every schedule, and finds the unfenced lost update,
// never a break of mutual exclusion.
func TestRedsyncLockContext(t *testing.T) {
	rdb := exploretest.Redis(t)
	res, err := exploretest.Explore(t, rdb, Redsync("redsync LockContext, one try", true, 1),
		explore.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	lostUpdateFound(t, res)
	if !res.Exhaustive || res.Diverged > 0 {
		t.Errorf("exhaustive %v, %d diverged; want an exhaustive search", res.Exhaustive,
			res.Diverged)
	}
	if res.FromStarted["A"] == 0 || res.FromStarted["B"] == 0 {
		t.Errorf("commands from goroutines the clients started: %v, want some of each",
			res.FromStarted)
	}
	t.Logf("%d schedules, exhaustive; from started goroutines %v", res.Schedules,
		res.FromStarted)
}

// TestRedsyncReadme: redsync as its README shows it, Lock() and Unlock()
// with the default 32 tries, 50 to 250 ms apart on a timer whose length
// rand.Intn draws: the waits run on the virtual clock (no ErrWallClock),
// the lost update is found, and no replay goes another way than its
// first run (exploretest.Explore seeds the random sources alike for
// every schedule). With -short the search stops at the lost update
// (among the first, random, schedules, which count no divergence); else
// it runs for 40 s, past those, into the replays of the exhaustive search.
func TestRedsyncReadme(t *testing.T) {
	rdb := exploretest.Redis(t)
	o := explore.Options{Workers: 1, Budget: 40 * time.Second}
	if testing.Short() {
		o = explore.Options{Workers: 1, Stop: []explore.Property{explore.Resource}}
	}
	res, err := exploretest.Explore(t, rdb, Redsync("redsync Lock, default tries", false, 0), o)
	if err != nil {
		t.Fatal(err)
	}
	lostUpdateFound(t, res)
	if res.Diverged > 0 {
		t.Errorf("%d of %d replays went another way than their first run", res.Diverged,
			res.Schedules)
	}
	t.Logf("%d schedules, %d timers fired, %d replays diverged", res.Schedules,
		res.TimersFired, res.Diverged)
}

// TestWatchdog: bsm/redislock renewed by a goroutine on a time.Ticker.
// The ticker fires on the virtual clock, its renewals are explored
// before, between and after the other client's commands, and the lost
// update of a holder paused past its lease (its watchdog with it) is
// found. Every replay takes its first run's choices (no divergence).
// With -short the search stops at the lost update; else it runs until
// done or 150 s, and says whether it went through every schedule.
func TestWatchdog(t *testing.T) {
	rdb := exploretest.Redis(t)
	var renewals atomic.Int64
	o := explore.Options{Workers: 1, Budget: 150 * time.Second}
	if testing.Short() {
		o = explore.Options{Workers: 1, Stop: []explore.Property{explore.Resource}}
	}
	start := time.Now()
	res, err := exploretest.Explore(t, rdb, Watchdog("redislock with a watchdog", &renewals), o)
	if err != nil {
		t.Fatal(err)
	}
	lostUpdateFound(t, res)
	if renewals.Load() == 0 || res.TimersFired == 0 {
		t.Errorf("%d renewals, %d timers fired: want the watchdog's renewals explored",
			renewals.Load(), res.TimersFired)
	}
	if res.Diverged > 0 {
		t.Errorf("%d of %d replays went another way than their first run", res.Diverged,
			res.Schedules)
	}
	t.Logf("%v: %d schedules, exhaustive %v (stopped %q), %d timers fired, %d renewals, "+
		"from started goroutines %v, %d diverged", time.Since(start).Round(time.Second),
		res.Schedules, res.Exhaustive, res.Stopped, res.TimersFired, renewals.Load(),
		res.FromStarted, res.Diverged)
}

// TestSameCounts: the same search twice, on one worker, counts the same
// schedules, with timers firing on the virtual clock (the watchdog's
// ticker), and random retry delays and tokens (redsync's rand.Intn,
// both libraries' crypto/rand), which exploretest.Explore seeds alike
// for every schedule: nothing is left to the machine's timing.
func TestSameCounts(t *testing.T) {
	targets := []func() *explore.Target{
		func() *explore.Target {
			return Watchdog("redislock with a watchdog", new(atomic.Int64))
		},
		func() *explore.Target { return Redsync("redsync Lock, default tries", false, 0) },
	}
	for _, target := range targets {
		var n [2]int
		var name string
		for i := range n {
			// A fresh server each: its script cache is part of what a
			// search meets.
			rdb := exploretest.Redis(t)
			tg := target()
			name = tg.Name
			res, err := exploretest.Explore(t, rdb, tg, explore.Options{Workers: 1,
				Stop: []explore.Property{explore.Resource}})
			if err != nil {
				t.Fatal(err)
			}
			n[i] = res.Schedules
		}
		if n[0] != n[1] {
			t.Errorf("%s: one search counted %d schedules, the same again %d", name, n[0],
				n[1])
		}
		t.Logf("%s: both searches counted %d schedules", name, n[0])
	}
}

// TestOutsideRefused: a command sent for a client by a goroutine that
// descends from no client (a worker of the process fed by a channel)
// ends the search with ErrOutside, naming the command.
func TestOutsideRefused(t *testing.T) {
	rdb := exploretest.Redis(t)
	jobs, results, done := make(chan func() error), make(chan error), make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case f := <-jobs:
				select {
				case results <- f():
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	target := &explore.Target{
		Name: "sends from a worker of the process",
		Client: func(ctx context.Context, c *explore.Client) error {
			job := func() error { return c.Redis().Set(ctx, c.Key("k"), c.Name(), 0).Err() }
			select {
			case jobs <- job:
			case <-done:
				return nil
			}
			select {
			case err := <-results:
				return err
			case <-done:
				return nil
			}
		},
	}
	_, err := explore.Check(context.Background(), rdb, target, explore.Options{Workers: 1})
	if !errors.Is(err, explore.ErrOutside) {
		t.Fatalf("err = %v, want ErrOutside", err)
	}
	if !strings.Contains(err.Error(), "sent SET k") {
		t.Errorf("%q does not name the command", err)
	}
}

// TestRedislockRetry: bsm/redislock's own retry loop, on a ticker under
// a deadline it sets, runs on the virtual clock: its tries are counted
// as timers fired, and the lost update is found. With -short the search
// stops there; else it runs until done or 150 s.
func TestRedislockRetry(t *testing.T) {
	rdb := exploretest.Redis(t)
	o := explore.Options{Workers: 1, Budget: 150 * time.Second}
	if testing.Short() {
		o.Stop = []explore.Property{explore.Resource}
	}
	start := time.Now()
	res, err := exploretest.Explore(t, rdb, Retrying("redislock, LinearBackoff retries"), o)
	if err != nil {
		t.Fatal(err)
	}
	lostUpdateFound(t, res)
	if res.TimersFired == 0 {
		t.Errorf("%d schedules, no timer fired: the retries were not explored", res.Schedules)
	}
	t.Logf("%v: %d schedules, exhaustive %v, %d timers fired, %d diverged",
		time.Since(start).Round(time.Second), res.Schedules, res.Exhaustive, res.TimersFired,
		res.Diverged)
}
