package sched

import (
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
)

// TestDilate: the clients' clock runs Dilation times the virtual clock,
// both ways, rounding a duration of the code under test up to a whole
// nanosecond of virtual time, and saturating at the largest durations.
func TestDilate(t *testing.T) {
	w := &world{Factor: plumbing.Dilation, Epoch: time.Unix(1000, 0)}
	for _, tc := range []struct {
		virtual, dilated time.Duration
	}{
		{0, 0},
		{time.Nanosecond, time.Millisecond},
		{10 * time.Second, 10_000_000 * time.Second},
		{-time.Nanosecond, -time.Millisecond},
	} {
		if got := w.Dilate(tc.virtual); got != tc.dilated {
			t.Errorf("dilate(%v) = %v, want %v", tc.virtual, got, tc.dilated)
		}
		if got := w.Undilate(tc.dilated); got != tc.virtual {
			t.Errorf("undilate(%v) = %v, want %v", tc.dilated, got, tc.virtual)
		}
		if got := w.Since(w.At(tc.virtual)); got != tc.virtual {
			t.Errorf("since(at(%v)) = %v", tc.virtual, got)
		}
	}
	// A constant of the code under test, not a whole nanosecond of
	// virtual time, lasts at least as long: rounded up.
	for _, tc := range []struct{ dilated, virtual time.Duration }{
		{time.Microsecond, time.Nanosecond},
		{time.Millisecond + 1, 2 * time.Nanosecond},
		{10 * time.Second / 3, 3334 * time.Nanosecond},
	} {
		if got := w.Undilate(tc.dilated); got != tc.virtual {
			t.Errorf("undilate(%v) = %v, want %v", tc.dilated, got, tc.virtual)
		}
	}
	if got := w.Dilate(time.Hour * 24 * 365); got != time.Duration(1<<63-1) {
		t.Errorf("dilate(a year) = %v, want the largest duration", got)
	}
}
