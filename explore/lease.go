package explore

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Lease is the property that the lock's key never outlives the lease its
// holder asked for: after every command that writes the key ${lock}, the
// time it has left to live is at most the longest lease a client asks for
// (its ${ttl}, in the manifest's ttl_unit). An extension that hands
// EXPIRE milliseconds breaks it: a crashed holder then blocks everyone a
// thousand times longer than it meant to. A key without expiry is for
// liveness to judge. Only recipes (manifests, Lua scripts) check it.
const Lease = "lease"

// checkLease records a lease violation when the action just taken ran a
// command that wrote the lock's key of a recipe and left it to live
// longer than the longest lease of the model.
func (e *Explorer) checkLease(ctx context.Context, w *world, s *schedule) error {
	n := len(s.actions)
	if e.target.recipe == nil || n == 0 || s.actions[n-1].Kind != Run ||
		slices.ContainsFunc(s.violations, func(v Violation) bool { return v.Property == Lease }) {
		return nil
	}
	key := lockKey(e.ns)
	w.mu.Lock()
	p := w.lastRun
	w.mu.Unlock()
	if p == nil || !p.write || p.node != "" || !slices.Contains(p.keys, key) {
		return nil
	}
	pttl, err := e.rdb.Do(ctx, "PTTL", key).Int64()
	if err != nil {
		return fmt.Errorf("explore: reading the lock's lease: %w", err)
	}
	var longest time.Duration
	for i := range e.model.Clients {
		longest = max(longest, e.model.leaseOf(i))
	}
	if pttl <= w.dilate(longest).Milliseconds() {
		return nil
	}
	a := s.actions[n-1]
	msg := fmt.Sprintf("at %s, after %s's %s, the lock's key lives %s more, longer than the longest lease a "+
		"client asked for (%v)", fmtAt(w.now), a.Client, a.Command, virtualText(pttl, w.factor), longest)
	i := n - 1
	s.violations = append(s.violations, Violation{Property: Lease, Message: msg, Step: i})
	if s.steps[i].Violation == "" {
		s.steps[i].Violation = Lease
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
