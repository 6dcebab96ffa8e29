package explore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestUnsteadyScheduleRunsAgain: a lease with 10 ms left after an advance
// of the clock runs out on the server if the schedule stalls 30 ms of real
// time before its next command, though the virtual clock says it has not:
// such a schedule is run again rather than reported, and when every run
// stalls the search says so (ErrUnsteady). Without the stall the lease is
// there, and gone after a second advance past its end.
func TestUnsteadyScheduleRunsAgain(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	for _, tc := range []struct {
		stall time.Duration
		want  error
	}{{0, nil}, {30 * time.Millisecond, ErrUnsteady}} {
		var got string
		target := &Target{Name: "stall", Checks: []string{Resource}, lockKeys: oneLockKey,
			run: func(ctx context.Context, c *client, _ Model) error {
				if c.idx > 0 {
					return nil
				}
				key := lockKey(c.w.t.ns)
				if err := c.rdb.Set(ctx, key, "x", time.Second).Err(); err != nil {
					return err
				}
				if err := (clock{c}).Sleep(ctx, 990*time.Millisecond); err != nil {
					return err
				}
				time.Sleep(tc.stall)
				v, err := c.rdb.Get(ctx, key).Result()
				if err != nil && !errors.Is(err, redis.Nil) {
					return err
				}
				got = v
				// A second advance, past the lease's end: it runs out.
				if err := (clock{c}).Sleep(ctx, 20*time.Millisecond); err != nil {
					return err
				}
				if v, err := c.rdb.Get(ctx, key).Result(); !errors.Is(err, redis.Nil) {
					got += ", then " + v
				}
				return nil
			},
			end: func(context.Context, *Explorer, *world) ([]Violation, error) { return nil, nil }}
		m := DefaultModel()
		m.TTL = time.Second
		e, err := New(ctx, b.Client, target, m)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.Replay(ctx, nil)
		e.Close()
		if !errors.Is(err, tc.want) {
			t.Errorf("stall %v: %v, want %v", tc.stall, err, tc.want)
		}
		if tc.want == nil && got != "x" {
			t.Errorf("stall %v: the lease read %q after 990 ms of its 1 s, want x", tc.stall, got)
		}
	}
}

// TestPipelineWithUnwatchWaits: a pipeline that begins with UNWATCH (the
// market gives a lock back that way: UNWATCH, then the release) waits for
// its turn like any other; only a pipeline of housekeeping alone goes
// unordered.
func TestPipelineWithUnwatchWaits(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	target := &Target{Name: "unwatch", Checks: []string{Resource}, lockKeys: oneLockKey,
		run: func(ctx context.Context, c *client, _ Model) error {
			if c.idx > 0 {
				return nil
			}
			_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, "unwatch")
				p.Incr(ctx, c.w.t.ns+counterName)
				return nil
			})
			return err
		},
		end: func(context.Context, *Explorer, *world) ([]Violation, error) { return nil, nil }}
	e, err := New(ctx, b.Client, target, DefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	snap, err := e.Cut(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.rdb.Get(ctx, e.Prefix()+counterName).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	if len(snap.Enabled) == 0 || snap.Enabled[0].Kind != Run || n != 0 {
		t.Fatalf("enabled %v, counter %d: want the pipeline waiting, the counter untouched", snap.Enabled, n)
	}
	steps, _, err := e.Replay(ctx, snap.Enabled[:1])
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || !strings.HasSuffix(steps[0].Text, "→ OK, 1") {
		t.Errorf("steps %v: want the pipeline run as one step", steps)
	}
}
