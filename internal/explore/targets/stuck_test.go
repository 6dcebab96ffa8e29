package targets_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestStuck: a client that blocks where the scheduler cannot see it (on
// a channel) makes the search end with ErrStuck, not hang, and not a
// verdict. The block lasts until the test ends, so the outcome does not
// depend on how fast the machine is, only on Options.StuckAfter passing.
func TestStuck(t *testing.T) {
	t.Parallel()
	rdb, stop := redistest.Embedded()
	defer stop()

	never := make(chan struct{})
	defer close(never)
	target := sched.Code(
		"blocks on a channel", 0, nil,
		func(ctx context.Context, c *sched.Client) error {
			if err := c.Redis().Set(ctx, c.Key("k"), c.Name(), 0).Err(); err != nil {
				return err
			}
			if c.Name() == "B" {
				select {
				case <-never:
				case <-ctx.Done():
				}
			}
			return nil
		}, nil,
	)
	m := action.DefaultModel()
	m.FaultKinds = nil
	_, err := sched.CheckTarget(context.Background(), rdb, target, sched.Options{Model: &m,
		StuckAfter: 200 * time.Millisecond})
	if !errors.Is(err, sched.ErrStuck) {
		t.Fatalf("err = %v, want ErrStuck", err)
	}
}
