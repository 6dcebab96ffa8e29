package locking_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

func TestOutcomeOf(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	// Real error replies: NOSCRIPT refuses before running anything; an
	// unknown command's "ERR" says nothing of what ran before it.
	noscript := b.Client.EvalSha(ctx, "0123456789012345678901234567890123456789", nil).Err()
	other := b.Client.Do(ctx, "NOSUCHCOMMAND").Err()
	for _, tc := range []struct {
		name string
		err  error
		want locking.Outcome
	}{
		{"nil", nil, locking.Applied},
		{"not acquired", fmt.Errorf("x: %w", locking.ErrNotAcquired), locking.NotApplied},
		{"not held", locking.ErrNotHeld, locking.NotApplied},
		{"lock lost", locking.ErrLockLost, locking.NotApplied},
		{"client closed", redis.ErrClosed, locking.NotApplied},
		{"pool timeout", redis.ErrPoolTimeout, locking.NotApplied},
		{"refusal reply", noscript, locking.NotApplied},
		{"other reply", other, locking.Unknown},
		{"deadline", context.DeadlineExceeded, locking.Unknown},
		{"lost reply", errors.New("read tcp: i/o timeout"), locking.Unknown},
	} {
		if got := locking.OutcomeOf(tc.err); got != tc.want {
			t.Errorf("%s (%v): %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
