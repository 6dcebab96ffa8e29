package locking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// TestLocksOnRedisCluster runs every single-instance lock type on a
// three-master Redis Cluster with keys that carry no hash tag: each lock's
// scripts touch several keys, which must therefore land in one slot.
func TestLocksOnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	rdb, _ := redistest.Cluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("fenced mutex with wake-ups", func(t *testing.T) {
		m := locking.NewMutex(rdb, "inventory", time.Minute, locking.WithFencing(), locking.WithWakeups())
		l1, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *locking.Lock, 1)
		go func() {
			l, err := m.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		if err := l1.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l2 := <-got
		if l2 == nil {
			return
		}
		if l2.Fence() <= l1.Fence() {
			t.Fatalf("fences %d then %d", l1.Fence(), l2.Fence())
		}
		if err := l2.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("reentrant", func(t *testing.T) {
		r := locking.NewReentrantMutex(rdb, "account", time.Minute)
		owner := locking.WithOwner(ctx, "alice")
		outer, err := r.Acquire(owner)
		if err != nil {
			t.Fatal(err)
		}
		inner, err := r.Acquire(owner)
		if err != nil || inner.Depth != 2 {
			t.Fatalf("%+v, %v", inner, err)
		}
		if err := inner.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := outer.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := r.Count(owner); err != nil || n != 0 {
			t.Fatalf("%d holds left, %v", n, err)
		}
	})
	t.Run("read-write", func(t *testing.T) {
		rw := locking.NewRWMutex(rdb, "prices", time.Minute)
		r, err := rw.AcquireRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rw.TryAcquireWrite(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("writer beside reader: %v", err)
		}
		r.Release(ctx)
		w, err := rw.AcquireWrite(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
