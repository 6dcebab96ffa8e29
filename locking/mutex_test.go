package locking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/locking/queue"
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
		first, err := locking.NewMutex(b.Client, "lock:w", time.Minute).TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The waiter has a client of its own, which counts its attempts.
		var tries attempts
		wc := b.NewClient(t)
		wc.AddHook(&tries)
		m := locking.NewMutex(wc, "lock:w", time.Minute)
		got := make(chan *locking.Lock, 1)
		go func() {
			l, err := m.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		tries.await(t, 1) // an attempt made while first holds the lock has failed
		if err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l := <-got
		if l == nil {
			return
		}
		if l.Waits() < 1 {
			t.Fatalf("Waits = %d, want >= 1", l.Waits())
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMutexNeverTwoHolders has goroutines contend for one mutex, with
// each combination of options, and checks that no two held it at once: a
// counter they increment without any other guard loses no update, and
// fences grow with every acquisition.
func TestMutexNeverTwoHolders(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	for _, tc := range []struct {
		name    string
		workers int
		opts    []locking.MutexOption
		fencing bool
	}{
		{"plain", 20, nil, false},
		{"wakeups", 8, []locking.MutexOption{locking.WithWakeups()}, false},
		{"fencing", 8, []locking.MutexOption{locking.WithFencing()}, true},
		{"fencing+wakeups", 8, []locking.MutexOption{locking.WithFencing(), locking.WithWakeups()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				const rounds = 10
				m := locking.NewMutex(b.Client, "lock:c", 10*time.Second, append([]locking.MutexOption{fast}, tc.opts...)...)
				var s section
				// Guarded by the Redis lock only.
				counter := 0
				var fences []int64
				contend(t, tc.workers, rounds, func(ctx context.Context, _ int) error {
					l, err := m.Acquire(ctx)
					if err != nil {
						return err
					}
					s.enter()
					c := counter
					time.Sleep(50 * time.Microsecond)
					counter = c + 1
					fences = append(fences, l.Fence())
					s.leave()
					return l.Release(ctx)
				})
				want := tc.workers * rounds
				if s.overlap.Load() || counter != int(s.entries.Load()) || counter != want {
					t.Fatalf("two holders at once: %v, counter %d, holds %d; want false, %d, %d",
						s.overlap.Load(), counter, s.entries.Load(), want, want)
				}
				for i, f := range fences {
					switch {
					case !tc.fencing && f != 0:
						t.Fatalf("fence %d at position %d without fencing", f, i)
					case tc.fencing && i > 0 && f <= fences[i-1]:
						t.Fatalf("fence %d at position %d follows %d", f, i, fences[i-1])
					}
				}
			})
		})
	}
}

// TestConfigurationRefusedWhereGiven: a lease or an option that cannot
// work panics where it is given, before anything is sent, instead of
// failing each acquisition or passing for a lost lock (the drifts
// KeepAlive refuses: TestKeepAliveRefusesADriftThatLeavesNoLease).
func TestConfigurationRefusedWhereGiven(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	l, err := locking.NewMutex(b.Client, "k", time.Second).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clients := []redis.UniversalClient{b.Client}
	for _, tc := range []struct {
		name string
		make func()
	}{
		{"NewMutex below 1ms", func() { locking.NewMutex(b.Client, "k", time.Microsecond) }},
		{"NewRWMutex below 1ms", func() { locking.NewRWMutex(b.Client, "k", 0) }},
		{"NewReentrantMutex below 1ms", func() { locking.NewReentrantMutex(b.Client, "k", -time.Second) }},
		{"NewRedlockMutex below 1ms", func() { locking.NewRedlockMutex(clients, "k", time.Microsecond) }},
		{"queue.NewMutex below 1ms", func() { queue.NewMutex(b.Client, "k", time.Microsecond) }},
		{"node timeout not positive", func() { locking.WithNodeTimeout(0) }},
		{"node timeout beyond the lease", func() {
			locking.NewRedlockMutex(clients, "k", time.Second, locking.WithNodeTimeout(time.Second))
		}},
		{"KeepAlive below 1ms", func() { locking.KeepAlive(ctx, l, time.Microsecond) }},
		{"AcquireKeepAlive with drift beyond the lease", func() {
			_, _, _ = locking.NewMutex(b.Client, "other", time.Second).AcquireKeepAlive(ctx, locking.WithDrift(time.Hour))
		}},
	} {
		if !panics(tc.make) {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if n, err := b.Client.Exists(ctx, "other").Result(); err != nil || n != 0 {
		t.Errorf("AcquireKeepAlive with a bad drift took the lock (exists %d, %v)", n, err)
	}
	// The smallest lease Redis can express is accepted.
	if panics(func() { locking.NewMutex(b.Client, "k", time.Millisecond) }) {
		t.Error("a 1ms lease was refused")
	}
	if err := l.Extend(ctx, time.Microsecond); err == nil || errors.Is(err, locking.ErrNotHeld) {
		t.Errorf("Extend below 1ms: %v; want a configuration error, not ErrNotHeld", err)
	}
}

// panics reports whether f panicked.
func panics(f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f()
	return false
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
