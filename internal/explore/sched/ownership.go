package sched

import (
	"slices"

	"github.com/lockmarket/lockmarket/internal/explore/result"
)

// checkOwnership moves the ownership violations the clients' replies
// showed into the schedule: the first one counts.
func (w *world) checkOwnership(s *Schedule) {
	w.mu.Lock()
	vs := w.owned
	w.owned = nil
	w.mu.Unlock()
	if len(vs) == 0 ||
		slices.ContainsFunc(
			s.Violations,
			func(v result.Violation) bool { return v.Property == result.Ownership },
		) {
		return
	}
	v := vs[0]
	if v.Step >= len(s.Steps) {
		v.Step = len(s.Steps) - 1
	}
	s.Violations = append(s.Violations, v)
	if v.Step >= 0 && s.Steps[v.Step].Violation == "" {
		s.Steps[v.Step].Violation = result.Ownership
	}
}
