package sched

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/redis/go-redis/v9"
)

// watchUnderClock is a client that leases a key, WATCHes it, sleeps on the
// virtual clock for sleep, then (readTTL) reads the key's time to live
// inside the transaction, or else commits (MULTI/EXEC) and reads it after.
// It fails when Redis did otherwise than on a real clock: an EXEC that
// failed though the lease was still running (time passing is no change of
// the key), one that succeeded though the lease ran out (its key was
// deleted), a time to live other than the lease less the virtual time
// since the lease was taken.
func watchUnderClock(
	ctx context.Context, c *Client, sleep time.Duration, readTTL bool, seen *watchSeen,
) error {
	rdb, k := c.Redis(), c.Key("leased:"+c.Name())
	lease := c.Model().TTL
	if err := rdb.Set(ctx, k, "v", c.Dilate(lease)).Err(); err != nil {
		return err
	}
	took := c.Elapsed()
	left := func() (time.Duration, error) {
		pttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			return 0, err
		}
		gone := c.Elapsed() - took
		got := c.Undilate(pttl)
		if want := lease - gone; gone < lease && (got > want+time.Millisecond ||
			got < want-time.Millisecond) {
			return 0, fmt.Errorf("%v after the lease of %v was taken, PTTL says %v left, want %v",
				gone, lease, got, want)
		}
		return gone, nil
	}
	err := rdb.Watch(ctx, func(tx *redis.Tx) error {
		if err := tx.Get(ctx, k).Err(); errors.Is(err, redis.Nil) {
			return errRanOut // the clock passed the lease before the WATCH
		} else if err != nil {
			return err
		}
		if err := c.Sleep(ctx, c.Dilate(sleep)); err != nil {
			return err
		}
		if readTTL {
			gone, err := left()
			if err == nil && gone > 0 && gone < lease {
				seen.readWatched.Add(1)
			}
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, c.Key("done:"+c.Name()), "1", 0)
			return nil
		})
		return err
	}, k)
	if errors.Is(err, errRanOut) {
		return nil
	}
	if readTTL {
		if errors.Is(err, redis.TxFailedErr) {
			err = nil
		}
		return err
	}
	gone := c.Elapsed() - took
	switch {
	case gone < lease && err != nil:
		return fmt.Errorf("EXEC %v after the lease was taken, %v before it ran out: %w",
			gone, lease-gone, err)
	case gone >= lease && !errors.Is(err, redis.TxFailedErr):
		return fmt.Errorf("EXEC %v after a lease of %v was taken: %v, want it aborted",
			gone, lease, err)
	case err != nil:
		seen.abortedRunOut.Add(1)
		return nil
	}
	if gone > 0 {
		seen.committedLater.Add(1)
	}
	_, err = left()
	return err
}

// watchSeen counts, over a search, the cases watchUnderClock checked that
// need the clock to have advanced while a key was watched: a commit after
// it, an EXEC aborted by the lease running out, a PTTL read while watched.
type watchSeen struct{ committedLater, abortedRunOut, readWatched atomic.Int64 }

var errRanOut = errors.New("the lease ran out")

// TestClockKeepsWatches checks that the virtual clock passing is no
// change of a key a transaction WATCHes, as on a real clock: in every
// schedule, a client that WATCHes its leased key and sleeps commits unless
// its lease ran out meanwhile, and the time to live it then reads (or
// reads while it watches) is the lease less the virtual time since it was
// taken. Each advance of the clock shortens the leases on the server
// (PEXPIRE): without the leases kept for a WATCH, every EXEC after one
// fails.
func TestClockKeepsWatches(t *testing.T) {
	srv := redistest.Real(t)
	m := action.DefaultModel()
	m.Clients, m.Faults, m.Ticks = 3, 0, 2
	var seen watchSeen
	tg := &Target{
		Name: "watch under the clock", Clients: 3,
		Workload: Workload{
			Run: func(ctx context.Context, c *Client) error {
				switch c.Index() {
				case 0:
					return watchUnderClock(ctx, c, time.Second, false, &seen)
				case 1:
					return watchUnderClock(ctx, c, c.Model().TTL+time.Second, false, &seen)
				}
				return watchUnderClock(ctx, c, 2*time.Second, true, &seen)
			},
			End: func(context.Context, *Explorer, Snapshot) ([]result.Violation, error) { return nil, nil },
		},
	}
	res := exploreWithOneWorker(t, srv.Client, tg, m)
	if !res.Exhaustive || res.Schedules < 3 {
		t.Fatalf("searched %d schedules, exhaustive %v", res.Schedules, res.Exhaustive)
	}
	// Each check ran: the clock advanced while a key was watched.
	n := []int64{seen.committedLater.Load(), seen.abortedRunOut.Load(), seen.readWatched.Load()}
	if n[0] == 0 || n[1] == 0 || n[2] == 0 {
		t.Errorf("commits after an advance %d, EXECs aborted by a lease run out %d, PTTLs read "+
			"while watched %d: want each checked at least once", n[0], n[1], n[2])
	}
	t.Logf("%d schedules (+%d cut); checked %v", res.Schedules, res.Pruned, n)
}

// TestExecMeetsWritesOfWatchedKeys checks that the reduced search orders
// an EXEC against another client's write of a key the EXEC's client
// WATCHes, though the EXEC names no such key: A WATCHes and reads k in one
// round trip, then commits a write of j; B writes k. Both outcomes are
// reached: A's commit, and its EXEC aborted by B's write between the two.
func TestExecMeetsWritesOfWatchedKeys(t *testing.T) {
	srv := redistest.Real(t)
	m := action.DefaultModel()
	m.Clients, m.Faults, m.Ticks = 2, 0, 0
	var mu sync.Mutex
	seen := map[string]bool{}
	tg := &Target{
		Name: "exec after a watch", Clients: 2,
		Workload: Workload{
			Run: func(ctx context.Context, c *Client) error {
				rdb := c.Redis()
				if c.Index() == 1 {
					return rdb.Set(ctx, c.Key("k"), "b", 0).Err()
				}
				conn := rdb.Conn()
				defer conn.Close()
				// Even when the schedule ends before the EXEC: the
				// connection goes back to its pool unwatched.
				defer conn.Do(ctx, "UNWATCH")
				if _, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
					p.Do(ctx, "WATCH", c.Key("k"))
					p.Get(ctx, c.Key("k"))
					return nil
				}); err != nil && !errors.Is(err, redis.Nil) {
					return err
				}
				_, err := conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, c.Key("j"), "a", 0)
					return nil
				})
				if errors.Is(err, redis.TxFailedErr) {
					return nil
				}
				return err
			},
			End: func(ctx context.Context, e *Explorer, _ Snapshot) ([]result.Violation, error) {
				n, err := e.Redis.Exists(ctx, e.KeyPrefix+"j").Result()

				mu.Lock()
				seen[fmt.Sprint("committed ", n == 1)] = true
				mu.Unlock()
				return nil, err
			},
		},
	}
	res := exploreWithOneWorker(t, srv.Client, tg, m)
	t.Logf("%d schedules (+%d cut): %v", res.Schedules, res.Pruned, seen)
	if !res.Exhaustive || !seen["committed true"] || !seen["committed false"] {
		t.Errorf("outcomes %v (exhaustive %v): want A's commit, and its EXEC aborted", seen,
			res.Exhaustive)
	}
}

// exploreWithOneWorker searches every schedule of tg under m, with one
// worker, on rdb.
func exploreWithOneWorker(
	t *testing.T, rdb *redis.Client, tg *Target, m action.Model,
) *result.Result {
	t.Helper()
	ctx := context.Background()
	e, err := NewExplorer(ctx, rdb, tg, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Explore(ctx, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
