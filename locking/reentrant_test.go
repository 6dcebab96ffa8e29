package locking_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

func TestReentrantCounts(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		r := locking.NewReentrant(b.Client, "lock:re", time.Minute)
		alice := locking.WithOwner(context.Background(), "alice")
		bob := locking.WithOwner(context.Background(), "bob")
		for want := 1; want <= 3; want++ {
			n, err := r.TryAcquire(alice)
			if err != nil || n != want {
				t.Fatalf("acquire %d: count %d, %v", want, n, err)
			}
		}
		if _, err := r.TryAcquire(bob); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("bob admitted while alice holds: %v", err)
		}
		if _, err := r.Release(bob); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("bob released alice's lock: %v", err)
		}
		if _, err := r.TryAcquire(context.Background()); !errors.Is(err, locking.ErrNoOwner) {
			t.Fatalf("no owner: %v", err)
		}
		if n, _ := r.Count(alice); n != 3 {
			t.Fatalf("count %d, want 3", n)
		}
		if err := r.Extend(alice, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := r.Extend(bob, time.Minute); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("bob extended alice's lock: %v", err)
		}
		for want := 2; want >= 0; want-- {
			n, err := r.Release(alice)
			if err != nil || n != want {
				t.Fatalf("release: %d left, %v; want %d", n, err, want)
			}
		}
		if b.Client.Exists(context.Background(), "lock:re").Val() != 0 {
			t.Fatal("key left after the last release")
		}
		if _, err := r.Release(alice); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("release of a free lock: %v", err)
		}
		if n, err := r.TryAcquire(bob); err != nil || n != 1 {
			t.Fatalf("bob after alice: %d, %v", n, err)
		}
	})
}

func TestReentrantExpiresAsAWhole(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		r := locking.NewReentrant(b.Client, "lock:rx", 5*time.Second)
		alice := locking.WithOwner(context.Background(), "alice")
		r.TryAcquire(alice)
		r.TryAcquire(alice)
		b.Expire(t, "lock:rx")
		if _, err := r.Release(alice); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("release after expiry: %v", err)
		}
		if _, err := r.TryAcquire(locking.WithOwner(context.Background(), "bob")); err != nil {
			t.Fatalf("bob after expiry: %v", err)
		}
	})
}

func TestReentrantNeverTwoOwners(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		r := locking.NewReentrant(b.Client, "lock:rc", 10*time.Second,
			locking.WithBackoff(locking.Backoff{Min: 100 * time.Microsecond, Max: 2 * time.Millisecond}))
		var inside atomic.Int32
		var overlap atomic.Bool
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(locking.WithOwner(context.Background(), fmt.Sprint("owner-", i)), 20*time.Second)
				defer cancel()
				for range 8 {
					if _, err := r.Acquire(ctx); err != nil {
						t.Error(err)
						return
					}
					if inside.Add(1) > 1 {
						overlap.Store(true)
					}
					// Re-enter, as a nested call holding the same lock would.
					if n, err := r.Acquire(ctx); err != nil || n != 2 {
						t.Errorf("re-entry: %d, %v", n, err)
					}
					if n, err := r.Release(ctx); err != nil || n != 1 {
						t.Errorf("inner release: %d, %v", n, err)
					}
					inside.Add(-1)
					if n, err := r.Release(ctx); err != nil || n != 0 {
						t.Errorf("outer release: %d, %v", n, err)
					}
				}
			})
		}
		wg.Wait()
		if overlap.Load() {
			t.Fatal("two owners held the lock at once")
		}
	})
}
