package sched

import (
	"slices"
)

// Ownership is the property that a release or an extension answered as
// a success was one of a hold that had not ended: its lease had not run
// out, and no other client had taken the lock since.
const Ownership = "ownership"

// OwnerName is a client's ${client}.
func OwnerName(client string) string { return "client-" + client }

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
			func(v Violation) bool { return v.Property == Ownership },
		) {
		return
	}
	v := vs[0]
	if v.Step >= len(s.Steps) {
		v.Step = len(s.Steps) - 1
	}
	s.Violations = append(s.Violations, v)
	if v.Step >= 0 && s.Steps[v.Step].Violation == "" {
		s.Steps[v.Step].Violation = Ownership
	}
}
