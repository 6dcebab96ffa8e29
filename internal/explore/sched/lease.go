package sched

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
)

// checkLease records a lease violation when the action just taken ran a
// command that wrote the lock's key of a recipe and lengthened its life
// by more than the longest lease of the model.
func (e *Explorer) checkLease(ctx context.Context, w *world, s *Schedule) error {
	n := len(s.actions)
	if e.target.lock().Ops == nil || n == 0 || s.actions[n-1].Kind != action.Run {
		return nil
	}
	key := LockKey(e.KeyPrefix)
	w.mu.Lock()
	p := w.lastRun
	w.mu.Unlock()
	if p == nil || !p.write || p.node != "" || !slices.Contains(p.keys, key) {
		return nil
	}
	if err := w.SettleLeases(ctx); err != nil {
		return err
	}
	pttl, err := e.Redis.Do(ctx, "PTTL", key).Int64()
	if err != nil {
		return fmt.Errorf("explore: reading the lock's lease: %w", err)
	}
	// What the key had left before the command: what it had at the last
	// read, less the virtual time since (every advance of the clock
	// shortens it by as much).
	before := max(0, w.leaseLeft-w.Dilate(w.Now-w.leaseAt).Milliseconds())
	w.leaseLeft, w.leaseAt = max(pttl, 0), w.Now
	var longest time.Duration
	for i := range e.model.Clients {
		longest = max(longest, e.model.LeaseOf(i))
	}
	// The advances of the clock give back the real time that ran the key
	// down since it was written, which the read above did not see: allow a
	// virtual millisecond (a second of the server's time at least).
	slack := max(w.Dilate(time.Millisecond), time.Second).Milliseconds()
	if pttl <= before+w.Dilate(longest).Milliseconds()+slack ||
		slices.ContainsFunc(s.Violations, func(v result.Violation) bool { return v.Property == result.Lease }) {
		return nil
	}
	a := s.actions[n-1]
	msg := fmt.Sprintf(
		"at %s, %s's %s left the lock's key %s to live, longer than the longest lease a client "+
			"asked for (%v)",
		action.FormatAt(w.Now), a.Client, a.Command, virtualText(pttl, w.Factor), longest,
	)
	if before > 0 {
		msg += fmt.Sprintf(" past the %s it had left", virtualText(before, w.Factor))
	}
	i := n - 1
	s.Violations = append(s.Violations, result.Violation{Property: result.Lease, Message: msg, Step: i})
	if s.Steps[i].Violation == "" {
		s.Steps[i].Violation = result.Lease
	}
	return nil
}

// virtualText is a time to live of ms milliseconds on the server, as
// virtual time under dilation factor.
func virtualText(ms, factor int64) string {
	secs := float64(ms) / float64(factor) / 1000
	if secs < 1e9 {
		return time.Duration(secs * float64(time.Second)).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%.3g s", secs)
}
