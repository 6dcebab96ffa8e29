package step

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/redis/go-redis/v9"
)

// TestStallChangesNothing: a client holds a 5 s lease, sleeps 4990 ms of
// virtual time (an advance of the clock that leaves the lease 10 ms),
// then stalls 30 ms of real time before its next command: a slow client,
// or a busy machine. The lease is long enough that, undilated, the
// machine's load before the advance cannot run it out. The stall is a
// time.Sleep, which the explorer would call a wait on the wall clock
// (ErrWallClock) after WallAfter of them: the test raises WallAfter, so
// it must not run in parallel with another test. Time being dilated, the stall moves the lease by
// 30 ns of virtual time: the client still reads its key, and the key is
// gone after a second advance past the lease's end, with no run again.
// Undilated (a factor of 1, as the explorer once ran), the same stall
// runs the lease out on the server's real clock though the virtual clock
// says it has 10 ms left: every run is unsteady, and the search says so
// (ErrUnsteady) rather than report what the machine's speed decided.
// (Undilated and without a stall of its own the outcome would depend on
// the machine's load, which is why the explorer dilates: that case is not
// tested.)
func TestStallChangesNothing(t *testing.T) {
	old := sched.WallAfter
	sched.WallAfter = time.Hour
	defer func() { sched.WallAfter = old }()
	b := redistest.Real(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		factor int64
		stall  time.Duration
		want   error
	}{
		{"dilated, steady", plumbing.Dilation, 0, nil},
		{"dilated, stalled", plumbing.Dilation, 30 * time.Millisecond, nil},
		{"undilated, stalled", 1, 30 * time.Millisecond, sched.ErrUnsteady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			target := &sched.Target{
				Name: "stall", Checks: []string{result.Resource},
				Workload: sched.Workload{Run: func(ctx context.Context, c *sched.Client) error {
					if c.Index() > 0 {
						return nil
					}
					key := sched.LockKey(c.Prefix())
					ttl := c.Dilate(5 * time.Second)
					if err := c.Redis().Set(ctx, key, "x", ttl).Err(); err != nil {
						return err
					}
					clk := c.Clock()
					if err := clk.Sleep(ctx, c.Dilate(4990*time.Millisecond)); err != nil {
						return err
					}
					time.Sleep(tc.stall)
					v, err := c.Redis().Get(ctx, key).Result()
					if err != nil && !errors.Is(err, redis.Nil) {
						return err
					}
					got = v
					// A second advance, past the lease's end: it runs out.
					if err := clk.Sleep(ctx, c.Dilate(20*time.Millisecond)); err != nil {
						return err
					}
					if v, err := c.Redis().Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
						got += ", then " + v
					}
					return nil
				},
					End: func(
						context.Context, *sched.Explorer, sched.Snapshot,
					) ([]result.Violation, error) {
						return nil, nil
					}}}
			m := action.DefaultModel()
			m.TTL = 5 * time.Second
			e, err := sched.NewExplorer(ctx, b.Client, target, m)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			e.Factor = tc.factor
			_, _, err = e.Replay(ctx, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			if tc.want != nil {
				return
			}
			if got != "x" {
				t.Errorf(
					"read %q after 4990 ms of a 5 s lease, then after 5010 ms: want x, then "+
						"nothing",
					got,
				)
			}
			if n := e.Reruns.Load(); n != 0 {
				t.Errorf("%d runs again, want 0", n)
			}
		})
	}
}

// TestPipelineWithUnwatchWaits: a pipeline that begins with UNWATCH (the
// market gives a lock back that way: UNWATCH, then the release) waits for
// its turn like any other; only a pipeline of housekeeping alone goes
// unordered.
func TestPipelineWithUnwatchWaits(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	target := &sched.Target{
		Name: "unwatch", Checks: []string{result.Resource},
		Workload: sched.Workload{Run: func(ctx context.Context, c *sched.Client) error {
			if c.Index() > 0 {
				return nil
			}
			_, err := c.Redis().Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, "unwatch")
				p.Incr(ctx, c.Prefix()+sched.CounterKey)
				return nil
			})
			return err
		},
			End: func(
				context.Context, *sched.Explorer, sched.Snapshot,
			) ([]result.Violation, error) {
				return nil, nil
			}}}
	e, err := sched.NewExplorer(ctx, b.Client, target, action.DefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	snap, err := Cut(ctx, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.Redis.Get(ctx, e.Prefix()+sched.CounterKey).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	if len(snap.Enabled) == 0 || snap.Enabled[0].Kind != action.Run || n != 0 {
		t.Fatalf(
			"enabled %v, counter %d: want the pipeline waiting, the counter untouched",
			snap.Enabled, n,
		)
	}
	steps, _, err := e.Replay(ctx, snap.Enabled[:1])
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || !strings.HasSuffix(steps[0].Text, "→ OK, 1") {
		t.Errorf("steps %v: want the pipeline run as one step", steps)
	}
}
