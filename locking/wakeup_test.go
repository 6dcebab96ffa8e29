package locking_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

func TestWakeupHandsOverWithoutPolling(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		// The backoff is far longer than the test's deadline: only the
		// release message can let the waiter in before the deadline.
		slow := locking.WithBackoff(locking.Backoff{Min: time.Hour, Max: time.Hour})
		m := locking.NewMutex(b.Client, "lock:wake", time.Minute, locking.WithWakeups(), slow)
		holder, err := m.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		subscribed := make(chan struct{})
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			close(subscribed)
			l, err := m.Acquire(wctx)
			if err == nil {
				err = l.Release(ctx)
			}
			got <- err
		}()
		<-subscribed
		// Wait until the waiter is subscribed, then release.
		for b.Client.PubSubNumSub(ctx, locking.WakeupChannel("lock:wake")).Val()[locking.WakeupChannel("lock:wake")] == 0 {
			time.Sleep(time.Millisecond)
		}
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("waiter: %v", err)
		}
	})
}

func TestWakeupFallsBackToBackoff(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m := locking.NewMutex(b.Client, "lock:lost", time.Minute, locking.WithWakeups())
		if _, err := m.TryAcquire(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := m.Acquire(ctx)
			done <- err
		}()
		// The lock goes away without a message (as when a lease runs out, or
		// the message is lost).
		if err := b.Client.Del(ctx, "lock:lost").Err(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("waiter never got the expired lock: %v", err)
		}
	})
}

func TestMutexVariantsNeverTwoHolders(t *testing.T) {
	fast := locking.WithBackoff(locking.Backoff{Min: 100 * time.Microsecond, Max: 2 * time.Millisecond})
	for _, tc := range []struct {
		name string
		opts []locking.Option
	}{
		{"wakeups", []locking.Option{fast, locking.WithWakeups()}},
		{"fencing+wakeups", []locking.Option{fast, locking.WithFencing(), locking.WithWakeups()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				m := locking.NewMutex(b.Client, "lock:v", 10*time.Second, tc.opts...)
				var inside, total atomic.Int64
				var overlap atomic.Bool
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for range 10 {
							l, err := m.Acquire(ctx)
							if err != nil {
								t.Error(err)
								return
							}
							if inside.Add(1) > 1 {
								overlap.Store(true)
							}
							time.Sleep(50 * time.Microsecond)
							inside.Add(-1)
							total.Add(1)
							if err := l.Release(ctx); err != nil && !errors.Is(err, locking.ErrNotHeld) {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if overlap.Load() || total.Load() != 80 {
					t.Fatalf("overlap %v, %d holds; want false, 80", overlap.Load(), total.Load())
				}
			})
		})
	}
}

// TestWakeupsShareOneSubscription has several waiters on one key, all with a
// backoff far longer than the test: the waiters share one subscription
// (one subscriber on the channel, not one per waiter), each release wakes
// the next of them, and once nobody waits the subscription and its
// goroutines go away.
func TestWakeupsShareOneSubscription(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const key, waiters = "lock:shared", 5
		channel := locking.WakeupChannel(key)
		slow := locking.WithBackoff(locking.Backoff{Min: time.Hour, Max: time.Hour})
		m := locking.NewMutex(b.Client, key, time.Minute, locking.WithWakeups(), slow)
		holder, err := m.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before := runtime.NumGoroutine()
		var held atomic.Int64
		errs := make(chan error, waiters)
		for range waiters {
			go func() {
				l, err := m.Acquire(ctx)
				if err == nil {
					held.Add(1)
					err = l.Release(ctx)
				}
				errs <- err
			}()
		}
		numSub := func() int64 {
			n, err := b.Client.PubSubNumSub(context.Background(), channel).Result()
			if err != nil {
				t.Fatal(err)
			}
			return n[channel]
		}
		for numSub() == 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // let every waiter make its first attempt
		if n := numSub(); n != 1 {
			t.Fatalf("%d subscribers on %s for %d waiters of one client; want 1", n, channel, waiters)
		}
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for range waiters {
			if err := <-errs; err != nil {
				t.Fatalf("waiter: %v", err)
			}
		}
		if held.Load() != waiters {
			t.Fatalf("%d of %d waiters held the lock", held.Load(), waiters)
		}
		// miniredis serves each connection with a goroutine of this
		// process, so the goroutine count is compared on redis-server only.
		for (b.Real() && runtime.NumGoroutine() > before) || locking.HasWakeHub(b.Client) || numSub() != 0 {
			if ctx.Err() != nil {
				t.Fatalf("after the waiters left: %d goroutines (%d before), hub %v, %d subscribers",
					runtime.NumGoroutine(), before, locking.HasWakeHub(b.Client), numSub())
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
