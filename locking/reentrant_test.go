package locking_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// count returns the owner's hold count in ctx, failing the test on error.
func count(t *testing.T, r *locking.ReentrantMutex, ctx context.Context) int {
	t.Helper()
	n, err := r.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReentrantCounts(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		r := locking.NewReentrantMutex(b.Client, "lock:re", time.Minute)
		alice := locking.WithOwner(context.Background(), "alice")
		bob := locking.WithOwner(context.Background(), "bob")
		var holds []*locking.ReentrantLock
		for want := 1; want <= 3; want++ {
			l, err := r.TryAcquire(alice)
			if err != nil || l.Depth != want || l.Token() != "alice" {
				t.Fatalf("acquire %d: %+v, %v", want, l, err)
			}
			holds = append(holds, l)
		}
		if _, err := r.TryAcquire(bob); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("bob admitted while alice holds: %v", err)
		}
		if _, err := r.TryAcquire(context.Background()); !errors.Is(err, locking.ErrNoOwner) {
			t.Fatalf("no owner: %v", err)
		}
		if n := count(t, r, alice); n != 3 {
			t.Fatalf("count %d, want 3", n)
		}
		if err := holds[0].Extend(alice, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		if ttl := b.Client.PTTL(context.Background(), "lock:re").Val(); ttl <= time.Minute {
			t.Fatalf("pttl after extend = %v; want above the first lease", ttl)
		}
		// Released innermost first, as nested calls return.
		for i, want := 2, 2; i >= 0; i, want = i-1, want-1 {
			if err := holds[i].Release(alice); err != nil {
				t.Fatalf("release of hold %d: %v", i+1, err)
			}
			if n := count(t, r, alice); n != want {
				t.Fatalf("release of hold %d: %d left; want %d", i+1, n, want)
			}
		}
		if b.Client.Exists(context.Background(), "lock:re").Val() != 0 {
			t.Fatal("key left after the last release")
		}
		if err := holds[0].Release(alice); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("second release of a hold: %v", err)
		}
		if err := holds[0].Extend(alice, time.Minute); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("extend of a released hold: %v", err)
		}
		if l, err := r.TryAcquire(bob); err != nil || l.Depth != 1 {
			t.Fatalf("bob after alice: %+v, %v", l, err)
		}
	})
}

// TestReentrantStaleHoldsTouchNothing has a released hold whose second
// release could decrement the other holds of its owner, and a stale hold
// of an owner whose lease ran out: neither may release or extend what
// another hold, or another owner, holds now.
func TestReentrantStaleHoldsTouchNothing(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		r := locking.NewReentrantMutex(b.Client, "lock:rt", 5*time.Second)
		alice := locking.WithOwner(context.Background(), "alice")
		bob := locking.WithOwner(context.Background(), "bob")
		outer, err := r.TryAcquire(alice)
		if err != nil {
			t.Fatal(err)
		}
		inner, err := r.TryAcquire(alice)
		if err != nil {
			t.Fatal(err)
		}
		if err := inner.Release(alice); err != nil {
			t.Fatal(err)
		}
		if err := inner.Release(alice); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("second release of the inner hold: %v", err)
		}
		if n := count(t, r, alice); n != 1 {
			t.Fatalf("alice's count %d after the inner hold's releases; want 1 (the outer)", n)
		}
		b.Expire(t, "lock:rt") // alice was paused past her lease
		taken, err := r.TryAcquire(bob)
		if err != nil {
			t.Fatalf("bob after expiry: %v", err)
		}
		if err := outer.Extend(alice, time.Minute); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("alice extended bob's lock: %v", err)
		}
		if err := outer.Release(alice); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("alice released bob's lock: %v", err)
		}
		if n := count(t, r, bob); n != 1 {
			t.Fatalf("bob's count %d; want 1", n)
		}
		if err := taken.Release(bob); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReentrantExpiresAsAWhole(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		r := locking.NewReentrantMutex(b.Client, "lock:rx", 5*time.Second)
		alice := locking.WithOwner(context.Background(), "alice")
		outer, err := r.TryAcquire(alice)
		if err != nil {
			t.Fatal(err)
		}
		inner, err := r.TryAcquire(alice)
		if err != nil {
			t.Fatal(err)
		}
		b.Expire(t, "lock:rx")
		for _, l := range []*locking.ReentrantLock{inner, outer} {
			if err := l.Release(alice); !errors.Is(err, locking.ErrNotHeld) {
				t.Fatalf("release of hold %d after expiry: %v", l.Depth, err)
			}
		}
		if _, err := r.TryAcquire(locking.WithOwner(context.Background(), "bob")); err != nil {
			t.Fatalf("bob after expiry: %v", err)
		}
	})
}

func TestReentrantNeverTwoOwners(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		r := locking.NewReentrantMutex(b.Client, "lock:rc", 10*time.Second, fast)
		var s section
		contend(t, 6, 8, func(ctx context.Context, worker int) error {
			ctx = locking.WithOwner(ctx, fmt.Sprint("owner-", worker))
			outer, err := r.Acquire(ctx)
			if err != nil {
				return err
			}
			s.enter()
			// Re-enter, as a nested call holding the same lock would.
			inner, err := r.Acquire(ctx)
			if err != nil || inner.Depth != 2 {
				return fmt.Errorf("re-entry: %+v, %v", inner, err)
			}
			if err := inner.Release(ctx); err != nil {
				return fmt.Errorf("inner release: %w", err)
			}
			if n, err := r.Count(ctx); err != nil || n != 1 {
				return fmt.Errorf("after the inner release: %d holds, %v; want 1", n, err)
			}
			s.leave()
			if err := outer.Release(ctx); err != nil {
				return fmt.Errorf("outer release: %w", err)
			}
			if n, err := r.Count(ctx); err != nil || n != 0 {
				return fmt.Errorf("after the outer release: %d holds, %v; want 0", n, err)
			}
			return nil
		})
		if s.overlap.Load() {
			t.Fatal("two owners held the lock at once")
		}
	})
}
