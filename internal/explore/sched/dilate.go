package sched

import (
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
)

// Dilate is the duration the code under test and the server see for the
// virtual duration v (saturating at the largest durations).
func (w *world) Dilate(v time.Duration) time.Duration { return plumbing.DilateBy(w.Factor, v) }

// Undilate is the virtual duration of d, a duration the code under test
// or the server sees, rounded up to a whole nanosecond: a sleep of d ends
// no earlier than d on the clients' clock, and a lease's end compares
// with the virtual time as the dilated end would.
func (w *world) Undilate(d time.Duration) time.Duration { return plumbing.UndilateBy(w.Factor, d) }

// At is what the clients' clock reads at virtual time v.
func (w *world) At(v time.Duration) time.Time { return w.Epoch.Add(w.Dilate(v)) }

// Since is the virtual time of t, a time the clients' clock read (or a
// lease's end computed from one).
func (w *world) Since(t time.Time) time.Duration { return w.Undilate(t.Sub(w.Epoch)) }
