package locking_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// stepClock is a clock that never waits: each Sleep moves it forward by
// the duration asked (or fails at once when the context has ended), and
// records the durations.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d == locking.Forever {
		<-ctx.Done()
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	return nil
}

func (c *stepClock) Go(f func()) { go f() }

// TestLocksUseTheContextsClock: a Mutex's lease estimate and its backoff
// run on the clock its context carries, not on the real one.
func TestLocksUseTheContextsClock(t *testing.T) {
	if _, ok := locking.ClockFrom(context.Background()).(locking.RealClock); !ok {
		t.Fatal("no clock in the context: want the real one")
	}
	b := redistest.Mini(t)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &stepClock{now: start}
	ctx := locking.WithClock(context.Background(), clk)
	m := locking.NewMutex(b.Client, "lock:clock", time.Minute)
	l, err := m.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Expires(); !got.Equal(start.Add(time.Minute)) {
		t.Errorf("lease estimate %v, want the context clock's now plus the TTL, %v", got, start.Add(time.Minute))
	}
	// A second holder waits: five attempts, four backoff sleeps of an
	// hour each on the context's clock, none of them real (a real one
	// would hold the test until go test's -timeout: no wall-clock bound
	// is needed to see it).
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	waiter := locking.NewMutex(b.Client, "lock:clock", time.Minute)
	hour := locking.Backoff{Min: time.Hour, Max: time.Hour}
	_, err = waiter.TryAcquire(wctx)
	for ; err != nil && n < 4; n++ {
		if err = hour.Wait(wctx, n); err == nil {
			_, err = waiter.TryAcquire(wctx)
		}
	}
	clk.mu.Lock()
	sleeps := slices.Clone(clk.sleeps)
	clk.mu.Unlock()
	if len(sleeps) != 4 || slices.ContainsFunc(sleeps, func(d time.Duration) bool {
		return d < time.Hour/2 || d > time.Hour // Delay's jitter: from half of Min to Max
	}) {
		t.Errorf("sleeps on the context's clock: %v, want 4 of half an hour to an hour", sleeps)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRealClockSleepEndsWithTheContext(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (locking.RealClock{}).Sleep(ended, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on an ended context: %v", err)
	}
	if err := (locking.RealClock{}).Sleep(context.Background(), time.Nanosecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
}
