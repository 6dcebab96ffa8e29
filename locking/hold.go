package locking

import (
	"time"

	"github.com/lockmarket/lockmarket/locking/internal/lease"
)

// hold is the part every hold type of this package has (a lease.Hold,
// which locking/queue's Lock has too): Lock, RWLock, ReentrantLock and
// RedlockLock each embed it, so each has these methods, and KeepAlive
// can read any hold's lease end.
type hold struct{ h *lease.Hold }

func newHold(key, token string, expires time.Time) hold {
	return hold{lease.NewHold(key, token, expires)}
}

// Key is the Redis key that stores the hold's token.
func (h *hold) Key() string { return h.h.Key() }

// Token is the value that identifies the hold in Redis.
func (h *hold) Token() string { return h.h.Token() }

// Expires is a conservative estimate of when the lease ends (see the
// package doc's Names).
func (h *hold) Expires() time.Time { return h.h.Expires() }

// Waits is how many attempts failed before the hold was granted.
func (h *hold) Waits() int { return h.h.Waits() }
