package locking_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
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

// TestWakeupsShareOneSubscription has several waiters on one key, all with a
// backoff far longer than the test: the waiters share one subscription
// (one subscriber on the channel, not one per waiter), each release wakes
// the next of them, and once nobody waits the subscription and its
// goroutines go away.
func TestWakeupsShareOneSubscription(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
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
		var tries attempts
		b.Client.AddHook(&tries)
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
		// A waiter makes its second attempt once it has joined the
		// subscription, and then waits for a wake-up.
		tries.await(t, 2*waiters)
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
