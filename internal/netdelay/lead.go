package netdelay

import (
	"slices"
	"sync/atomic"
	"time"
)

const (
	// leadStep is how far one delivery moves the lead.
	leadStep = time.Microsecond
	// maxLead bounds the lead.
	maxLead = time.Millisecond
	// calibrationSleeps and calibrationSleep are the timer waits Start
	// measures to set the first lead.
	calibrationSleeps = 15
	calibrationSleep  = 200 * time.Microsecond
)

// lead is how much earlier than a chunk's due time its timer is armed: it
// follows the median lateness of the timer, one step per delivery (later
// when a delivery was late, earlier when it was early), so that half the
// deliveries land before their due time and half after. One lead is shared
// by every link of a proxy.
type lead struct{ ns atomic.Int64 }

// calibrate sets the lead to the median lateness of a few timer waits.
func (ld *lead) calibrate() error {
	w, err := newWaiter()
	if err != nil {
		return err
	}
	defer w.close()
	late := make([]time.Duration, calibrationSleeps)
	for i := range late {
		start := time.Now()
		if err := w.sleep(calibrationSleep); err != nil {
			return err
		}
		late[i] = time.Since(start) - calibrationSleep
	}
	slices.Sort(late)
	ld.set(late[len(late)/2])
	return nil
}

// get is the current lead.
func (ld *lead) get() time.Duration { return time.Duration(ld.ns.Load()) }

// set stores d, kept within [0, maxLead].
func (ld *lead) set(d time.Duration) { ld.ns.Store(int64(min(max(d, 0), maxLead))) }

// move adds delta to the lead, kept within [0, maxLead].
func (ld *lead) move(delta time.Duration) {
	for {
		old := ld.ns.Load()
		next := int64(min(max(time.Duration(old)+delta, 0), maxLead))
		if ld.ns.CompareAndSwap(old, next) {
			return
		}
	}
}

// wait returns about when due has come, by w's timer armed lead earlier,
// and moves the lead by what the timer did: a wake after due asks for an
// earlier arming, a wake before due (or no wait at all, when due was
// closer than the lead) for a later one. A chunk already late when it
// comes to be delivered says nothing of the timer and moves nothing.
func (ld *lead) wait(w *waiter, due time.Time) error {
	d := time.Until(due) - ld.get()
	if d <= 0 {
		if time.Now().Before(due) {
			ld.move(-leadStep)
		}
		return nil
	}
	if err := w.sleep(d); err != nil {
		return err
	}
	if time.Now().After(due) {
		ld.move(leadStep)
	} else {
		ld.move(-leadStep)
	}
	return nil
}
