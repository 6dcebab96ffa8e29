package redistest

import (
	"context"
	"testing"
	"time"
)

// ReportMargin is what a test keeps of its deadline to fail on its own,
// naming what it waited for, and to close what it opened, before go
// test's -timeout ends the test binary with a panic.
const ReportMargin = 15 * time.Second

// Deadline is when a test's wait for an event gives up: the test
// binary's deadline (go test's -timeout, 10 minutes by default, 20 on
// CI) less ReportMargin. It is the one wall-clock bound of such a wait:
// a busy machine only makes the event come later, and an event that
// has not come by then will not come. ok is false under -timeout 0,
// when nothing bounds the wait but the event.
func Deadline(t *testing.T) (d time.Time, ok bool) {
	d, ok = t.Deadline()
	return d.Add(-ReportMargin), ok
}

// UntilDeadline returns ctx ended at Deadline(t) (not ended by time
// under -timeout 0), for a test's waits on a browser's page or a
// service's answer.
func UntilDeadline(ctx context.Context, t *testing.T) (context.Context, context.CancelFunc) {
	if d, ok := Deadline(t); ok {
		return context.WithDeadline(ctx, d)
	}
	return context.WithCancel(ctx)
}

// WaitFor polls cond every few milliseconds until it holds, and fails
// the test naming what it waited for if it does not hold by Deadline(t).
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	d, bounded := Deadline(t)
	for !cond() {
		if bounded && time.Now().After(d) {
			t.Fatalf("gave up waiting for %s at the test's deadline", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
