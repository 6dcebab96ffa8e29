package locking_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/internal/testsupport/roundtrip"
	"github.com/lockmarket/lockmarket/locking"
)

// TestAcquirePipedCarriesCommands: an uncontended AcquirePiped sends the
// acquisition and the caller's commands in one round trip, and a queued
// release inside MULTI/EXEC gives the lock back with the commit.
func TestAcquirePipedCarriesCommands(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "fenced"}[fenced]
		t.Run(name, func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				c := b.NewClient(t)
				counter := &roundtrip.Counter{}
				c.AddHook(counter)
				must(t, c.Set(ctx, "{p}:data", "v1", 0).Err())
				var opts []locking.MutexOption
				if fenced {
					opts = append(opts, locking.WithFencing())
				}
				m := locking.NewMutex(c, "{p}:lock", 10*time.Second, opts...)
				// Warm up: the connection's handshake and the script cache
				// must not count.
				warm, err := m.AcquirePiped(ctx, c, nil)
				must(t, err)
				must(t, warm.Release(ctx))
				before := counter.Load()
				var got *redis.StringCmd
				l, err := m.AcquirePiped(ctx, c, func(p redis.Pipeliner) { got = p.Get(ctx, "{p}:data") })
				must(t, err)
				if n := counter.Load().Sub(before).RoundTrips; n != 1 {
					t.Fatalf("acquisition with a read took %d round trips, want 1", n)
				}
				if l.Waits() != 0 || got.Val() != "v1" {
					t.Fatalf("waits %d, read %q; want 0 and v1", l.Waits(), got.Val())
				}
				if fenced && l.Fence() < 2 {
					t.Fatalf("fence %d, want > the warm-up's", l.Fence())
				}
				if v := c.Get(ctx, "{p}:lock").Val(); v != l.Token() {
					t.Fatalf("lock holds %q, want the hold's token", v)
				}
				var released func() error
				before = counter.Load()
				_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, "{p}:data", "v2", 0)
					released = l.QueueRelease(ctx, p)
					return nil
				})
				must(t, err)
				must(t, released())
				if n := counter.Load().Sub(before).RoundTrips; n != 1 {
					t.Fatalf("commit with release took %d round trips, want 1", n)
				}
				if n := c.Exists(ctx, "{p}:lock").Val(); n != 0 {
					t.Fatal("lock still held after the queued release")
				}
			})
		})
	}
}

// TestAcquirePipedWaitsAndReportsLoss: a contended AcquirePiped waits for
// the holder and reports Waits > 0 (the caller's commands ran only with the
// first attempt); a queued release of a lost lease reports ErrNotHeld.
func TestAcquirePipedWaitsAndReportsLoss(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m := locking.NewMutex(b.Client, "{q}:lock", 10*time.Second)
		first, err := m.Acquire(ctx)
		must(t, err)
		var calls atomic.Int32
		done := make(chan struct{})
		var l *locking.Lock
		var aerr error
		go func() {
			defer close(done)
			l, aerr = m.AcquirePiped(ctx, b.Client, func(p redis.Pipeliner) {
				calls.Add(1)
				p.Incr(ctx, "{q}:attempts")
			})
		}()
		// The waiter's first attempt fails while first holds the lock;
		// wait until the server has run it before releasing.
		for b.Client.Get(ctx, "{q}:attempts").Val() != "1" {
			time.Sleep(time.Millisecond)
		}
		must(t, first.Release(ctx))
		<-done
		must(t, aerr)
		if l.Waits() == 0 || calls.Load() != 1 {
			t.Fatalf("waits %d, commands queued %d times; want > 0 and 1", l.Waits(), calls.Load())
		}
		b.Expire(t, "{q}:lock") // the lease runs out
		var released func() error
		_, err = b.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
			released = l.QueueRelease(ctx, p)
			return nil
		})
		must(t, err)
		if err := released(); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("release after expiry: %v, want ErrNotHeld", err)
		}
	})
}

// TestAcquirePipedLeavesTheCallersErrorsToTheCaller: a missing key and a
// refused command among the caller's queued commands do not decide the
// acquisition: it is granted, and the errors are on their commands.
func TestAcquirePipedLeavesTheCallersErrorsToTheCaller(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "fenced"}[fenced], func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				must(t, b.Client.Set(ctx, "{e}:text", "not a number", 0).Err())
				var opts []locking.MutexOption
				if fenced {
					opts = append(opts, locking.WithFencing())
				}
				m := locking.NewMutex(b.Client, "{e}:lock", time.Minute, opts...)
				var missing *redis.StringCmd
				var refused *redis.IntCmd
				l, err := m.AcquirePiped(ctx, b.Client, func(p redis.Pipeliner) {
					missing = p.Get(ctx, "{e}:missing")
					refused = p.Incr(ctx, "{e}:text")
				})
				must(t, err)
				if !errors.Is(missing.Err(), redis.Nil) || refused.Err() == nil {
					t.Fatalf("caller's replies: %v, %v; want redis.Nil and an error", missing.Err(), refused.Err())
				}
				// A background release, had one been started, would have deleted
				// the lock by the time Settle returns.
				must(t, m.Settle(ctx))
				if got := b.Client.Get(ctx, "{e}:lock").Val(); got != l.Token() {
					t.Fatalf("lock holds %q, want the hold's token", got)
				}
			})
		})
	}
}

// TestAcquirePipedGivesUp: with the lock held throughout, AcquirePiped
// ends with ErrNotAcquired wrapping the context's error.
func TestAcquirePipedGivesUp(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		m := locking.NewMutex(b.Client, "{r}:lock", 10*time.Second)
		_, err := m.Acquire(context.Background())
		must(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err = m.AcquirePiped(ctx, b.Client, nil)
		if !errors.Is(err, locking.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want ErrNotAcquired and DeadlineExceeded", err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
