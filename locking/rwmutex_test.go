package locking_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

func TestRWMutexReadersAndWriter(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		rw := locking.NewRWMutex(b.Client, "{rw}", time.Minute)
		r1, err := rw.TryAcquireRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := rw.TryAcquireRead(ctx)
		if err != nil {
			t.Fatalf("second reader refused: %v", err)
		}
		if _, err := rw.TryAcquireWrite(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("writer admitted beside readers: %v", err)
		}
		// The failed writer now waits: new readers are held back.
		if _, err := rw.TryAcquireRead(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("reader admitted ahead of a waiting writer: %v", err)
		}
		// One reader leaving does not release the other's hold.
		if err := r2.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r2.Release(ctx); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("double release: %v", err)
		}
		if _, err := rw.TryAcquireWrite(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("writer admitted while reader 1 still reads: %v", err)
		}
		if err := r1.Extend(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := r1.Release(ctx); err != nil {
			t.Fatal(err)
		}
		w, err := rw.TryAcquireWrite(ctx)
		if err != nil {
			t.Fatalf("writer refused after readers left: %v", err)
		}
		if _, err := rw.TryAcquireRead(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("reader admitted beside writer: %v", err)
		}
		if _, err := rw.TryAcquireWrite(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("second writer admitted: %v", err)
		}
		if err := w.Release(ctx); err != nil {
			t.Fatal(err)
		}
		// Each TryAcquireWrite above used a fresh token, so the first failed one
		// left its marker behind: readers stay out until it expires.
		_, _, waiting := rw.Keys()
		if _, err := rw.TryAcquireRead(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("reader admitted despite a writer's marker: %v", err)
		}
		b.Expire(t, waiting)
		r3, err := rw.TryAcquireRead(ctx)
		if err != nil {
			t.Fatalf("reader refused on a free lock: %v", err)
		}
		// AcquireWrite, unlike TryAcquireWrite, clears its marker when it
		// gives up.
		short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		defer cancel()
		if _, err := rw.AcquireWrite(short); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("writer admitted beside a reader: %v", err)
		}
		if b.Client.Exists(ctx, waiting).Val() != 0 {
			t.Fatal("writer-waiting marker left behind by AcquireWrite")
		}
		r3.Release(ctx)
	})
}

func TestRWMutexHoldsExpire(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		rw := locking.NewRWMutex(b.Client, "{rwx}", 5*time.Second)
		r, err := rw.TryAcquireRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		readers, writer, _ := rw.Keys()
		if r.Key() != readers || r.Write() {
			t.Fatalf("read hold on %q (write %v); want %q", r.Key(), r.Write(), readers)
		}
		b.Expire(t, readers) // the reader crashed
		w, err := rw.TryAcquireWrite(ctx)
		if err != nil {
			t.Fatalf("writer refused after the reader's hold expired: %v", err)
		}
		if w.Key() != writer || !w.Write() {
			t.Fatalf("write hold on %q (write %v); want %q", w.Key(), w.Write(), writer)
		}
		if got := b.Client.Get(ctx, writer).Val(); got != w.Token() {
			t.Fatalf("writer key holds %q; want the hold's token", got)
		}
		if err := r.Release(ctx); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("expired reader release: %v", err)
		}
		b.Expire(t, writer) // the writer crashed
		if _, err := rw.TryAcquireRead(ctx); err != nil {
			t.Fatalf("reader refused after the writer's hold expired: %v", err)
		}
		if err := w.Release(ctx); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("expired writer release: %v", err)
		}
	})
}

func TestRWMutexWriterNotStarved(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		rw := locking.NewRWMutex(b.Client, "{rws}", 10*time.Second,
			locking.WithBackoff(locking.Backoff{Min: 200 * time.Microsecond, Max: 2 * time.Millisecond}))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Readers overlap continuously: at every moment some reader holds
		// the lock, so without writer preference no writer would get in.
		var wg sync.WaitGroup
		var reads atomic.Int64
		for range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					r, err := rw.AcquireRead(ctx)
					if err != nil {
						return
					}
					reads.Add(1)
					time.Sleep(2 * time.Millisecond)
					r.Release(context.Background())
				}
			})
		}
		for reads.Load() < 20 {
			time.Sleep(time.Millisecond)
		}
		wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer wcancel()
		w, err := rw.AcquireWrite(wctx)
		cancel()
		wg.Wait()
		if err != nil {
			t.Fatalf("writer starved: %v", err)
		}
		w.Release(context.Background())
	})
}

func TestRWMutexExclusionUnderContention(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		rw := locking.NewRWMutex(b.Client, "{rwc}", 10*time.Second, fast)
		var readers, writers atomic.Int32
		var bad atomic.Bool
		contend(t, 6, 10, func(ctx context.Context, worker int) error {
			write := worker < 2
			acquire := rw.AcquireRead
			if write {
				acquire = rw.AcquireWrite
			}
			h, err := acquire(ctx)
			if err != nil {
				return err
			}
			if h.Write() != write {
				return fmt.Errorf("hold with Write() %v; want %v", h.Write(), write)
			}
			if write {
				if writers.Add(1) > 1 || readers.Load() > 0 {
					bad.Store(true)
				}
			} else if readers.Add(1); writers.Load() > 0 {
				bad.Store(true)
			}
			time.Sleep(100 * time.Microsecond)
			if write {
				writers.Add(-1)
			} else {
				readers.Add(-1)
			}
			return h.Release(ctx)
		})
		if bad.Load() {
			t.Fatal("a writer shared the lock")
		}
	})
}
