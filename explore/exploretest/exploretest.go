// Package exploretest runs package explore from go test: a redis-server
// for the test, and a check that fails the test with the counterexample.
//
//	func TestMutex(t *testing.T) {
//		rdb := exploretest.Redis(t)
//		target := &explore.Target{Name: "my mutex", Clients: 3, Client: client}
//		exploretest.Check(t, rdb, target, explore.Options{})
//	}
//
// Of this module, it imports only explore, the runtime that runs each
// schedule's clients in a bubble of the test (internal/explore/sched) and
// the test's server (internal/redis/redisserver).
package exploretest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	mrand2 "math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
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

// Explore explores target as Check does, with its clients in
// testing/synctest bubbles of t, and returns what it found without
// failing the test: for a test that asserts a lock is caught, or of the
// explorer itself. In a bubble the real-time waits of the clients' code
// (time.Sleep, timers, tickers, contexts' deadlines), however deep in a
// library, run on the explorer's virtual clock, and a timer's firing is
// a step of the schedules like any other; explore.Check, outside a
// test, refuses them (explore.ErrWallClock).
func Explore(
	t *testing.T, rdb *redis.Client, target *explore.Target, o explore.Options,
) (*explore.Result, error) {
	t.Helper()
	return search(t, rdb, target, Sharded(t, o))
}

// search runs explore.Check for Explore and Check: in bubbles of tb
// when it is a test's (inBubbles), outside them for a benchmark's, whose
// testing.B cannot make one.
func search(
	tb testing.TB, rdb *redis.Client, target *explore.Target, o explore.Options,
) (*explore.Result, error) {
	ctx := context.Background()
	if t, ok := tb.(*testing.T); ok {
		// The random sources are the process's: set while another
		// worker's clients draw from them, they race, and two clients
		// of one schedule may draw the same token.
		ctx = inBubbles(t, o.Workers == 1)
	}
	return explore.Check(ctx, rdb, target, o)
}

// inBubbles is the context under which a search runs each schedule's
// clients in a testing/synctest bubble of t, its random sources seeded
// (seedRandom) when seed is set: for a search on one worker.
func inBubbles(t *testing.T, seed bool) context.Context {
	return sched.WithBubbles(context.Background(), func(f func()) {
		synctest.Test(t, func(bt *testing.T) {
			if seed {
				seedRandom(bt)
			}
			f()
		})
	})
}

// scheduleSeed is the seed of the random sources each schedule's clients
// draw from (seedRandom): the same for every schedule, so that what a
// schedule's code draws depends only on its choices.
const scheduleSeed = 1

// seeding is set while a schedule's bubble has set the random sources.
var seeding atomic.Bool

// seedRandom sets the process's random sources to scheduleSeed for the
// schedule about to run in the bubble of bt, and back to random values
// when it ends: crypto/rand (testing/cryptotest.SetGlobalRandom, which
// also covers the crypto packages' own draws) and math/rand's top-level
// functions (rand.Seed, honoured with GODEBUG randseednop=0, which it
// sets). A library's random retry delays (redsync's rand.Intn) and
// tokens are then the same in every run of a schedule, and a replay
// takes the same choices. These sources are the process's: a search
// on more than one worker does not seed them (search). In a parallel
// test crypto/rand is not set
// (cryptotest refuses it there). math/rand/v2's top-level functions and
// the runtime's choice among a select's ready cases cannot be seeded: a
// replay they turn another way counts in Result.Diverged.
func seedRandom(bt *testing.T) {
	if !seeding.CompareAndSwap(false, true) {
		return // another schedule's bubble has them: workers run at once
	}
	bt.Cleanup(func() { seeding.Store(false) }) // last, after the sources are reset
	if !slices.Contains(strings.Split(os.Getenv("GODEBUG"), ","), "randseednop=0") {
		v := "randseednop=0"
		if old := os.Getenv("GODEBUG"); old != "" {
			v = old + "," + v
		}
		os.Setenv("GODEBUG", v)
	}
	func() {
		defer func() { _ = recover() }() // a parallel test: crypto/rand stays random
		cryptotest.SetGlobalRandom(bt, scheduleSeed)
	}()
	//lint:ignore SA1019 the deprecated global seed is what the clients' code draws from
	rand.Seed(scheduleSeed)
	bt.Cleanup(func() {
		//lint:ignore SA1019 as above: back to a random stream for the rest of the process
		rand.Seed(int64(mrand2.Uint64() >> 1))
	})
}

// Check explores target as Explore does, its clients in
// testing/synctest bubbles of the test (for a benchmark's tb, outside
// them, as explore.Check does: a wall-clock wait of its code then ends
// the search with explore.ErrWallClock), and fails the test for each
// property broken, with its message, its steps and the timeline of its
// replay. It fails it too when the search fails, when replays diverged,
// or when a finding was unsteady: then no violation proves nothing. It
// returns the result.
func Check(
	tb testing.TB, rdb *redis.Client, target *explore.Target, o explore.Options,
) *explore.Result {
	tb.Helper()
	o = Sharded(tb, o)
	res, err := search(tb, rdb, target, o)
	return failures(tb, target, o, res, err)
}

// failures fails tb for what the search of target with o found (res,
// err), as Check says, and returns res.
func failures(
	tb testing.TB, target *explore.Target, o explore.Options, res *explore.Result, err error,
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
	if o.Shard.Count > 1 {
		tb.Logf("%s: shard %d of %d: %d schedules, every one of its part: %v",
			res.Target, o.Shard.Index, o.Shard.Count, res.Schedules, res.Exhaustive)
	}
	if len(res.Counterexamples) == 0 && !res.Exhaustive {
		tb.Logf("%s: no violation in %d schedules, but the search did not cover every schedule",
			res.Target, res.Schedules)
	}
	return res
}

// Sharded returns o with its Shard set as a test runner that splits a
// test into shards asks, in the variables Bazel sets: TEST_TOTAL_SHARDS
// shards, of which this is TEST_SHARD_INDEX (from 0). It touches the file
// TEST_SHARD_STATUS_FILE names, which tells the runner the test splits. A
// CI matrix or a Kubernetes Indexed Job sets the same variables from its
// index. Without them, or for a search that is not exhaustive (which does
// not split: each shard runs it whole), o is returned as it is; values
// that do not make a shard fail the test.
func Sharded(tb testing.TB, o explore.Options) explore.Options {
	tb.Helper()
	if f := os.Getenv("TEST_SHARD_STATUS_FILE"); f != "" {
		if err := touch(f); err != nil {
			tb.Fatalf("exploretest: TEST_SHARD_STATUS_FILE: %v", err)
		}
	}
	sh, err := shardOf(os.Getenv("TEST_TOTAL_SHARDS"), os.Getenv("TEST_SHARD_INDEX"))
	if err != nil {
		tb.Fatalf("exploretest: %v", err)
	}
	if sh.Count <= 1 || o.Mode != "" && o.Mode != explore.Exhaustive {
		return o
	}
	o.Shard = sh
	tb.Logf("exploretest: shard %d of %d (from 0): this part of the search only",
		sh.Index, sh.Count)
	return o
}

// shardOf reads the shard TEST_TOTAL_SHARDS and TEST_SHARD_INDEX name
// (none when neither is set).
func shardOf(total, index string) (explore.Shard, error) {
	if total == "" && index == "" {
		return explore.Shard{}, nil
	}
	n, err1 := strconv.Atoi(total)
	i, err2 := strconv.Atoi(index)
	if err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return explore.Shard{}, fmt.Errorf("TEST_TOTAL_SHARDS=%q, TEST_SHARD_INDEX=%q: want "+
			"N from 1, and an index from 0 to N-1", total, index)
	}
	return explore.Shard{Index: i, Count: n}, nil
}

// touch creates the file name, or sets its times to now.
func touch(name string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	now := time.Now()
	return os.Chtimes(name, now, now)
}
