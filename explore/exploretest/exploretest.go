// Package exploretest runs package explore from go test: a redis-server
// for the test, and a check that fails the test with the counterexample.
//
//	func TestMutex(t *testing.T) {
//		rdb := exploretest.Redis(t)
//		target := &explore.Target{Name: "my mutex", Clients: 3, Client: client}
//		exploretest.Check(t, rdb, target, explore.Options{})
//	}
package exploretest

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/explore/sched"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/redis/go-redis/v9"
)

// Redis starts a private redis-server on a free loopback port for the
// test, with persistence off, and returns a client of it; both end with
// the test. Without a redis-server on PATH the test is skipped, or fails
// when the environment says CI=true.
func Redis(tb testing.TB) *redis.Client {
	tb.Helper()
	srv, err := redisserver.Start(context.Background(),
		redisserver.Options{Args: []string{"--hz", "100"}})
	if errors.Is(err, redisserver.ErrNoBinary) {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			tb.Fatalf("exploretest: no redis-server on PATH, and CI=true: " +
				"the test may not be skipped")
		}
		tb.Skip("exploretest: no redis-server on PATH")
	}
	if err != nil {
		tb.Fatalf("exploretest: starting redis-server: %v", err)
	}
	tb.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true})
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// Explore explores target with its clients in testing/synctest bubbles
// of t, and returns what it found without failing the test: for a test
// that asserts a lock is caught, or of the explorer itself. In a
// bubble the real-time waits of the clients' code (time.Sleep, timers,
// tickers, contexts' deadlines), however deep in a library, run on the
// explorer's virtual clock, and a timer's firing is a step of the
// schedules like any other; explore.Check, outside a test, refuses them
// (explore.ErrWallClock).
func Explore(
	t *testing.T, rdb *redis.Client, target *explore.Target, o explore.Options,
) (*explore.Result, error) {
	t.Helper()
	ctx := sched.WithBubbles(context.Background(), func(f func()) {
		synctest.Test(t, func(*testing.T) { f() })
	})
	return explore.Check(ctx, rdb, target, o)
}

// Check explores target (explore.Check, outside bubbles: a wall-clock
// wait of its code ends the search with explore.ErrWallClock; Explore
// runs such waits on the virtual clock) and fails the test for each
// property broken, with its message, its steps and the timeline of its
// replay. It fails it too when the search fails, when replays diverged,
// or when a finding was unsteady: then no violation proves nothing. It
// returns the result.
func Check(
	tb testing.TB, rdb *redis.Client, target *explore.Target, o explore.Options,
) *explore.Result {
	tb.Helper()
	res, err := explore.Check(context.Background(), rdb, target, o)
	return failures(tb, target, res, err)
}

// failures fails tb for what the search of target found (res, err), as
// Check says, and returns res.
func failures(
	tb testing.TB, target *explore.Target, res *explore.Result, err error,
) *explore.Result {
	tb.Helper()
	if err != nil {
		tb.Fatalf("exploring %s: %v", target.Name, err)
	}
	for _, c := range res.Counterexamples {
		tb.Errorf("%s: %s broken: %s\n%s", res.Target, c.Property, c.Message, c)
	}
	// No violation is a proof only when the search could follow the
	// code: every replay went its way, and every finding was replayed.
	if res.Diverged > 0 {
		tb.Errorf("%s: %d replays went another way than their first run: the code did "+
			"something the explorer does not order, and the search is no proof",
			res.Target, res.Diverged)
	}
	for _, c := range res.Unsteady {
		tb.Errorf("%s: %s broken in the search, but not when replayed (unsteady): %s",
			res.Target, c.Property, c.Message)
	}
	if len(res.Counterexamples) == 0 && !res.Exhaustive {
		tb.Logf("%s: no violation in %d schedules, but the search did not cover every schedule",
			res.Target, res.Schedules)
	}
	return res
}
