package httpapi

import (
	"fmt"
	"sync"
	"time"
)

// auditShare bounds the share of time audits take: each audit is followed
// by a pause of at least auditShare-1 times its duration.
const auditShare = 20

// auditLimiter lets one audit run at a time in the process and spaces
// audits out. An audit's snapshot is one MULTI/EXEC, during which Redis
// serves nobody else, followed by reads of every receipt; both grow with
// the market. Without a limit, clients looping on the audit would keep
// Redis and the service busy with audits; with it, audits take at most
// 1/auditShare of the time (5%), whatever the market's size, and writers are
// never made to wait for one (the audit takes no gate).
type auditLimiter struct {
	now      func() time.Time
	cooldown time.Duration // least pause after an audit

	mu      sync.Mutex
	running bool
	took    time.Duration // duration of the last audit
	next    time.Time     // no audit starts before
}

// start claims the right to run an audit. When it cannot, it says why and
// how long to wait before trying again.
func (l *auditLimiter) start() (wait time.Duration, busy string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	switch {
	case l.running:
		return l.pause(), "an audit is running"
	case now.Before(l.next):
		return l.next.Sub(now), fmt.Sprintf("the last audit ended less than %v ago", l.pause().Round(time.Millisecond))
	}
	l.running = true
	return 0, ""
}

// finish ends the audit that start let begin at begun.
func (l *auditLimiter) finish(begun time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.running = false
	l.took = now.Sub(begun)
	l.next = now.Add(l.pause())
}

// pause is the pause after the last audit.
func (l *auditLimiter) pause() time.Duration {
	return max(l.cooldown, (auditShare-1)*l.took)
}
