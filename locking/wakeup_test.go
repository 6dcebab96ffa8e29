package locking_test

import (
	"context"
	"errors"
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
