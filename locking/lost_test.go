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

// TestLostAcquisitionIsReleased: an acquisition whose reply is lost (the
// server applies the SET after the client gave up) is released once the
// server answers again, long before its lease would end.
func TestLostAcquisitionIsReleased(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	for _, kind := range []struct {
		name   string
		opts   []locking.MutexOption
		fenced bool
	}{
		{"plain", nil, false},
		{"fenced", []locking.MutexOption{locking.WithFencing()}, true},
		{"wakeups", []locking.MutexOption{locking.WithWakeups()}, false},
	} {
		for _, way := range []struct {
			name    string
			acquire func(ctx context.Context, m *locking.Mutex, c *redis.Client) error
		}{
			{"TryAcquire", func(ctx context.Context, m *locking.Mutex, _ *redis.Client) error {
				_, err := m.TryAcquire(ctx)
				return err
			}},
			{"Acquire", func(ctx context.Context, m *locking.Mutex, _ *redis.Client) error {
				_, err := m.Acquire(ctx)
				return err
			}},
			{"AcquirePiped", func(ctx context.Context, m *locking.Mutex, c *redis.Client) error {
				_, err := m.AcquirePiped(ctx, c, func(p redis.Pipeliner) { p.Get(ctx, "{lost}:data") })
				return err
			}},
		} {
			t.Run(way.name+"/"+kind.name, func(t *testing.T) {
				b := redistest.Real(t)
				ctx := context.Background()
				const key, lease = "{lost}:lock", time.Minute
				fenced, opts := kind.fenced, kind.opts
				// The holder's client gives up on a reply after 50 ms.
				c := redis.NewClient(&redis.Options{Addr: b.Addr(), ReadTimeout: 50 * time.Millisecond})
				t.Cleanup(func() { c.Close() })
				m := locking.NewMutex(c, key, lease, opts...)
				// Warm up: a connection in the pool and the acquisition
				// script in the server's cache, so that the acquisition
				// itself is what the stopped server receives.
				warm, err := locking.NewMutex(c, "{lost}:warm", lease, opts...).TryAcquire(ctx)
				must(t, err)
				must(t, warm.Release(ctx))
				must(t, b.Client.Del(ctx, locking.FenceKey(key)).Err())
				must(t, b.Client.ConfigResetStat(ctx).Err())
				must(t, b.Server.Signal(syscall.SIGSTOP))
				err = way.acquire(ctx, m, c)
				must(t, b.Server.Signal(syscall.SIGCONT))
				if err == nil || errors.Is(err, locking.ErrNotAcquired) {
					t.Fatalf("acquisition against a stopped server: %v, want a lost reply", err)
				}
				// Wait until the server has run the lost acquisition (the
				// poll may be served before it when the server resumes),
				// then until the lock is free: far fewer polls than the
				// lease, so only a release frees it.
				const polls = 300
				n := 0
				for ; n < polls && !acquisitionRan(t, b, fenced); n++ {
					time.Sleep(10 * time.Millisecond)
				}
				if n == polls {
					t.Fatal("the acquisition never reached the server")
				}
				for n = 0; n < polls && b.Client.Exists(ctx, key).Val() == 1; n++ {
					time.Sleep(10 * time.Millisecond)
				}
				if n == polls {
					t.Fatalf("lock still held (pttl %v) after %d polls; the lost acquisition was not released",
						b.Client.PTTL(ctx, key).Val(), polls)
				}
				t.Logf("free after %d polls of 10 ms; the lease was %v", n, lease)
				if _, err := locking.NewMutex(b.Client, key, lease).TryAcquire(ctx); err != nil {
					t.Fatalf("fresh acquisition: %v", err)
				}
				// The background release has ended, or ends now.
				must(t, m.Settle(ctx))
			})
		}
	}
}

// acquisitionRan reports whether the server ran an acquisition since
// its statistics were reset: a SET, or for a fenced mutex the increment
// of its fence counter.
func acquisitionRan(t *testing.T, b *redistest.Backend, fenced bool) bool {
	t.Helper()
	ctx := context.Background()
	if fenced {
		n, err := b.Client.Get(ctx, locking.FenceKey("{lost}:lock")).Int64()
		return err == nil && n > 0
	}
	stats, err := b.Client.InfoMap(ctx, "commandstats").Result()
	must(t, err)
	_, ok := stats["Commandstats"]["cmdstat_set"]
	return ok
}

// TestRetriedAcquisitionRecognisesItsToken: a client that retries an
// acquisition whose first reply it lost finds its own token in the key;
// that is a granted lock, not one held by someone else.
func TestRetriedAcquisitionRecognisesItsToken(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		for _, piped := range []bool{false, true} {
			name := map[bool]string{false: "TryAcquire", true: "AcquirePiped"}[piped] +
				map[bool]string{false: "/plain", true: "/fenced"}[fenced]
			t.Run(name, func(t *testing.T) {
				redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
					// AcquirePiped waits while the lock looks taken: bound it.
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					var opts []locking.MutexOption
					if fenced {
						opts = append(opts, locking.WithFencing())
					}
					c := b.NewClient(t)
					c.AddHook(resend{})
					m := locking.NewMutex(c, "{re}:lock", time.Minute, opts...)
					var l *locking.Lock
					var err error
					if piped {
						l, err = m.AcquirePiped(ctx, c, nil)
					} else {
						l, err = m.TryAcquire(ctx)
					}
					if err != nil {
						t.Fatalf("retried acquisition: %v (the lock holds %q)", err, b.Client.Get(context.Background(), "{re}:lock").Val())
					}
					if got := b.Client.Get(ctx, "{re}:lock").Val(); got != l.Token() {
						t.Fatalf("lock holds %q, want the hold's token", got)
					}
					if fenced && l.Fence() != 1 {
						t.Fatalf("fence %d, want 1 (one acquisition)", l.Fence())
					}
				})
			})
		}
	}
}

// TestSettleStopsLostReleases: with the server still stopped, Settle
// gives up when its context ends, having stopped the background release.
func TestSettleStopsLostReleases(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: b.Addr(), ReadTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	m := locking.NewMutex(c, "{stop}:lock", time.Minute)
	// The connection is made before the server stops; on a busy machine
	// a reply can take longer than the 50 ms read timeout, so try again.
	var err error
	for range 100 {
		if err = c.Ping(ctx).Err(); err == nil {
			break
		}
	}
	must(t, err)
	must(t, b.Server.Signal(syscall.SIGSTOP))
	defer b.Server.Signal(syscall.SIGCONT)
	if _, err := m.TryAcquire(ctx); err == nil || errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("acquisition against a stopped server: %v, want a lost reply", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Settle(sctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Settle with an ended context: %v, want context.Canceled", err)
	}
	if err := m.Settle(ctx); err != nil {
		t.Fatalf("Settle after the releases stopped: %v", err)
	}
}
