package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// refusedDial is the error of a connection the server refuses (it is
// restarting): the command never left the client.
var refusedDial = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// TestRetryAnswers: a retry answers for a lost reply only when it reached
// the market's check: a success (a repeat of an applied operation finds
// its record and succeeds) or a refusal about the item. A retry refused
// before it (the server restarting, contention) says nothing of the first
// attempt, which may have applied: the resolver tries again, and its
// outcome stays unknown if nothing answers.
func TestRetryAnswers(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{fmt.Errorf("purchase: %w", market.ErrListingNotFound), true},
		{market.ErrInsufficientFunds, true},
		{refusedDial, false},
		{io.EOF, false},
		{market.ErrContended, false},
		{locking.ErrNotAcquired, false},
	} {
		if got := answered(tc.err); got != tc.want {
			t.Errorf("answered(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	rec := history.NewRecorder()
	var rs resolver
	tries := []error{refusedDial, nil}
	err := rs.retry(context.Background(), rec.Invoke(0, history.Purchase, "b", "s", "i", 1),
		io.EOF, func() error {
			err := tries[0]
			tries = tries[1:]
			return err
		})
	if err != nil || rs.resolved.Load() != 1 {
		t.Errorf("retry after a refused dial then a success: %v, resolved %d; want nil, 1", err,
			rs.resolved.Load())
	}
	// Cancelled before any retry answers: the outcome stays unknown.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = rs.retry(ctx, rec.Invoke(0, history.Purchase, "b", "s", "i", 1), io.EOF,
		func() error { return refusedDial })
	if o, _ := history.Classify(err); o != history.Unknown || !errors.Is(err, io.EOF) {
		t.Errorf("unanswered retry: %v (%v), want the first attempt's unknown outcome", err, o)
	}
}
