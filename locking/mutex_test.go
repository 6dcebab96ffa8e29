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

func TestMutexOnlyHolderReleasesOrExtends(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m := locking.NewMutex(b.Client, "lock:a", 10*time.Second)
		l1, err := m.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.TryAcquire(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("second TryAcquire: %v, want ErrNotAcquired", err)
		}
		// Only l1's token is stored.
		if got := b.Client.Get(ctx, "lock:a").Val(); got != l1.Token() {
			t.Fatalf("stored token %q, want %q", got, l1.Token())
		}
		if err := l1.Extend(ctx, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		if ttl := b.Client.PTTL(ctx, "lock:a").Val(); ttl <= 10*time.Second {
			t.Fatalf("ttl after extend = %v", ttl)
		}
		if err := l1.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l1.Release(ctx); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("second release: %v, want ErrNotHeld", err)
		}
		if err := l1.Extend(ctx, time.Second); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("extend after release: %v, want ErrNotHeld", err)
		}
	})
}

func TestMutexExpiredHolderCannotReleaseNextHolder(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m := locking.NewMutex(b.Client, "lock:x", 5*time.Second)
		old, err := m.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b.Expire(t, "lock:x") // the old holder was paused past its lease
		next, err := m.TryAcquire(ctx)
		if err != nil {
			t.Fatalf("lock not free after expiry: %v", err)
		}
		if err := old.Release(ctx); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("stale release: %v, want ErrNotHeld", err)
		}
		if err := old.Extend(ctx, time.Second); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("stale extend: %v, want ErrNotHeld", err)
		}
		if got := b.Client.Get(ctx, "lock:x").Val(); got != next.Token() {
			t.Fatalf("next holder lost its lock: stored %q", got)
		}
	})
}

func TestMutexAcquireGivesUpAtDeadline(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		m := locking.NewMutex(b.Client, "lock:busy", time.Minute)
		if _, err := m.TryAcquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		_, err := m.Acquire(ctx)
		if !errors.Is(err, locking.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrNotAcquired and DeadlineExceeded", err)
		}
	})
}

func TestMutexAcquireCountsWaits(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m := locking.NewMutex(b.Client, "lock:w", time.Minute)
		first, err := m.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *locking.Lock)
		go func() {
			l, err := m.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		time.Sleep(5 * time.Millisecond) // the waiter's first attempt fails meanwhile
		if err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l := <-got
		if l == nil {
			return
		}
		if l.Waits < 1 {
			t.Fatalf("Waits = %d, want >= 1", l.Waits)
		}
		l.Release(ctx)
	})
}

func TestMutexNeverTwoHolders(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m := locking.NewMutex(b.Client, "lock:c", 10*time.Second, locking.WithBackoff(locking.Backoff{Min: 100 * time.Microsecond, Max: 2 * time.Millisecond}))
		var inside, total atomic.Int64
		var overlap atomic.Bool
		counter := 0 // guarded by the Redis lock only
		var wg sync.WaitGroup
		for range 20 {
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
					c := counter
					time.Sleep(50 * time.Microsecond)
					counter = c + 1
					total.Add(1)
					inside.Add(-1)
					if err := l.Release(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if overlap.Load() || counter != int(total.Load()) || counter != 200 {
			t.Fatalf("two holders at once: %v, counter %d, increments %d; want false, 200, 200", overlap.Load(), counter, total.Load())
		}
	})
}

func TestMutexRejectsTinyTTL(t *testing.T) {
	b := redistest.Mini(t)
	if _, err := locking.NewMutex(b.Client, "k", time.Microsecond).TryAcquire(context.Background()); err == nil {
		t.Fatal("a ttl below 1ms was accepted")
	}
}

func TestBackoffBounds(t *testing.T) {
	b := locking.Backoff{Min: time.Millisecond, Max: 8 * time.Millisecond}
	for n := range 40 {
		for range 50 {
			d := b.Delay(n)
			if d < b.Min/2 || d > b.Max {
				t.Fatalf("Delay(%d) = %v outside [%v, %v]", n, d, b.Min/2, b.Max)
			}
		}
	}
}
