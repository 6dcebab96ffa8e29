package locking_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// advance lets lease time pass: real time on a real server; on miniredis,
// whose keys expire only when its clock is moved, the clock is moved by d
// and a little real time is given to the watchdog.
func advance(b *redistest.Backend, d time.Duration) {
	if b.Mini != nil {
		b.Mini.FastForward(d)
		return
	}
	time.Sleep(d)
}

func TestWatchdogKeepsLockForSeveralTTLs(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		const ttl = 600 * time.Millisecond
		m := locking.NewMutex(b.Client, "lock:dog", ttl)
		h, work, err := m.AcquireKeepAlive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Six rounds of half a lease each: three leases in all. Before each
		// round wait until the watchdog has renewed (the remaining lease is
		// back above 80%), so each round starts from a fresh lease.
		for round := range 6 {
			deadline := time.Now().Add(10 * time.Second)
			for b.Client.PTTL(ctx, "lock:dog").Val() < ttl*8/10 {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: no renewal seen (pttl %v)", round, b.Client.PTTL(ctx, "lock:dog").Val())
				}
				time.Sleep(time.Millisecond)
			}
			advance(b, ttl/2)
			if work.Err() != nil {
				t.Fatalf("round %d: work cancelled: %v", round, context.Cause(work))
			}
		}
		if got := b.Client.Get(ctx, "lock:dog").Val(); got != h.Token() {
			t.Fatalf("lock holds %q, want the holder's token", got)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if work.Err() == nil {
			t.Fatal("work context still live after release")
		}
		if errors.Is(context.Cause(work), locking.ErrLockLost) {
			t.Fatal("a normal release reported as a lost lock")
		}
	})
}

func TestWatchdogCancelsWorkWhenLockLost(t *testing.T) {
	const ttl = 1500 * time.Millisecond
	for _, tc := range []struct {
		name   string
		inject func(t *testing.T, b *redistest.Backend)
		undo   func(b *redistest.Backend)
	}{
		{"taken over", func(t *testing.T, b *redistest.Backend) {
			if err := b.Client.Set(context.Background(), "lock:lost", "someone-else", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"deleted", func(t *testing.T, b *redistest.Backend) {
			if err := b.Client.Del(context.Background(), "lock:lost").Err(); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"redis unreachable", func(t *testing.T, b *redistest.Backend) {
			if b.Mini != nil {
				b.Mini.Close()
				return
			}
			if err := b.Server.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}, func(b *redistest.Backend) {
			if b.Server != nil {
				b.Server.Signal(syscall.SIGCONT)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				m := locking.NewMutex(b.Client, "lock:lost", ttl)
				h, work, err := m.AcquireKeepAlive(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if tc.undo != nil {
					defer tc.undo(b)
				}
				tc.inject(t, b)
				select {
				case <-work.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("work context never cancelled")
				}
				cause := context.Cause(work)
				if !errors.Is(cause, locking.ErrLockLost) {
					t.Fatalf("cause %v, want ErrLockLost", cause)
				}
				// What ended the work: a lock taken or deleted is noticed by
				// the next renewal, which is refused (the watchdog checks
				// that the lease it knows of still runs before it renews,
				// so a refusal means the loss was seen while the lease
				// lasted, not when it ran out); a silent server, only when
				// the lease runs out unanswered.
				if refused := errors.Is(cause, locking.ErrNotHeld); refused != (tc.undo == nil) {
					t.Fatalf("cause %v: refused renewal %v, want %v", cause, refused, tc.undo == nil)
				}
				if tc.undo != nil {
					tc.undo(b)
				}
				if b.Mini != nil && tc.undo != nil {
					return // the server is gone
				}
				rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				err = h.Release(rctx)
				// An extension sent while the server was stalled may still
				// land when it resumes, so after a stall the release may
				// find the lock still ours; otherwise it must not.
				if !errors.Is(err, locking.ErrNotHeld) && (tc.undo == nil || err != nil) {
					t.Fatalf("release after loss: %v, want ErrNotHeld", err)
				}
			})
		})
	}
}

func TestKeepAliveStopsOnParentCancel(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		parent, cancel := context.WithCancel(context.Background())
		l, err := locking.NewMutex(b.Client, "lock:p", time.Second).TryAcquire(parent)
		if err != nil {
			t.Fatal(err)
		}
		work, stop := locking.KeepAlive(parent, l, time.Second)
		cancel()
		stop() // returns only once the watchdog goroutine has ended
		if !errors.Is(work.Err(), context.Canceled) {
			t.Fatalf("work: %v", work.Err())
		}
		stop()
	})
}
