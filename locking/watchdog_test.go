package locking_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		// A lease long enough that a busy machine still sees each renewal
		// (the remaining lease is above 80% for a fifth of it, 400 ms).
		const ttl = 2 * time.Second
		m := locking.NewMutex(b.Client, "lock:dog", ttl)
		h, work, err := m.AcquireKeepAlive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Six rounds of half a lease each: three leases in all. Before each
		// round wait until the watchdog has renewed (the remaining lease is
		// back above 80%), so each round starts from a fresh lease.
		for round := range 6 {
			deadline := time.Now().Add(30 * time.Second)
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
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
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

// observation is what a client saw of the lock key.
type observation struct {
	value string
	pttl  time.Duration
	err   error
}

func observe(ctx context.Context, c *redis.Client, key string) observation {
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	return observation{get.Val(), pttl.Val(), err}
}

// TestKeepAliveCancelsBeforeTheLeaseEnds: a holder cut off from Redis has
// its work cancelled while the lease still runs on the server. The lock
// key is read once the work is cancelled (after the server resumes, when
// it was stopped): it still holds the holder's token with time left, so
// the cancellation came first. An extension sent during the stall and
// applied on resume extends only a lease that had not ended, so it cannot
// make a late cancellation look early.
func TestKeepAliveCancelsBeforeTheLeaseEnds(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		opts []locking.KeepAliveOption
		// stall cuts the holder off from Redis and returns what undoes it.
		stall func(t *testing.T, b *redistest.Backend, g *gate) func()
	}{
		// The drift allowance is also the time the test has, after the
		// cancellation, to resume the server and read the key: a loaded
		// machine needs more than the default's 52 ms of a 5 s lease.
		{"server stopped", 5 * time.Second, []locking.KeepAliveOption{locking.WithDrift(2 * time.Second)}, func(t *testing.T, b *redistest.Backend, _ *gate) func() {
			must(t, b.Server.Signal(syscall.SIGSTOP))
			return func() { b.Server.Signal(syscall.SIGCONT) }
		}},
		{"replies held back, wider drift", 5 * time.Second, []locking.KeepAliveOption{locking.WithDrift(2 * time.Second)}, func(t *testing.T, b *redistest.Backend, g *gate) func() {
			g.close()
			return g.open
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := redistest.Real(t)
			ctx := context.Background()
			var g gate
			c := b.NewClient(t)
			c.AddHook(&g)
			h, work, err := locking.NewMutex(c, "lock:margin", tc.ttl).AcquireKeepAlive(ctx, tc.opts...)
			must(t, err)
			resume := tc.stall(t, b, &g)
			seen := make(chan observation, 1)
			context.AfterFunc(work, func() {
				resume()
				seen <- observe(ctx, b.Client, "lock:margin")
			})
			var o observation
			select {
			case o = <-seen:
			case <-time.After(time.Minute):
				resume()
				t.Fatal("work context never cancelled")
			}
			cause := context.Cause(work)
			if !errors.Is(cause, locking.ErrLockLost) || errors.Is(cause, locking.ErrNotHeld) {
				t.Fatalf("cause %v, want ErrLockLost from a renewal without answer", cause)
			}
			if o.err != nil || o.value != h.Token() || o.pttl <= 0 {
				t.Fatalf("when the work was cancelled the lock held %q (pttl %v, err %v); want the holder's token with time left",
					o.value, o.pttl, o.err)
			}
		})
	}
}

// TestKeepAliveRefusesADriftThatLeavesNoLease: a drift allowance below 0
// or not below the TTL is a configuration error, refused before any
// watchdog starts (a panic), not reported as a lost lock.
func TestKeepAliveRefusesADriftThatLeavesNoLease(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	l, err := locking.NewMutex(b.Client, "lock:d", time.Second).TryAcquire(ctx)
	must(t, err)
	for _, drift := range []time.Duration{-time.Millisecond, time.Second, time.Hour} {
		if !panics(func() { locking.KeepAlive(ctx, l, time.Second, locking.WithDrift(drift)) }) {
			t.Errorf("drift %v accepted", drift)
		}
	}
	work, stop := locking.KeepAlive(ctx, l, time.Second, locking.WithDrift(0))
	if work.Err() != nil {
		t.Fatalf("drift 0 refused: %v", context.Cause(work))
	}
	stop()
}

// TestQueueReleaseStopsTheWatchdog: a hold of AcquireKeepAlive released
// in a pipeline ends its watchdog as Release does: the work context ends
// at once, as a normal end, not later as a lost lock.
func TestQueueReleaseStopsTheWatchdog(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		l, work, err := locking.NewMutex(b.Client, "{qr}:lock", time.Minute).AcquireKeepAlive(ctx)
		must(t, err)
		var released func() error
		_, err = b.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "{qr}:data", "done", 0)
			released = l.QueueRelease(ctx, p)
			return nil
		})
		must(t, err)
		must(t, released())
		if work.Err() == nil {
			t.Fatal("work context still live after the queued release: its watchdog still runs")
		}
		if cause := context.Cause(work); errors.Is(cause, locking.ErrLockLost) {
			t.Fatalf("a normal release reported as a lost lock: %v", cause)
		}
	})
}
