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

// Key is the Redis key that stores the hold's token: the lock's key (for
// an RWLock, the writer key of the write hold and the readers key of a
// read hold).
func (h hold) Key() string { return h.h.Key() }

// Token is the value that identifies the hold in Redis: a random token,
// or for a ReentrantLock the owner (WithOwner).
func (h hold) Token() string { return h.h.Token() }

// Expires is a conservative estimate of when the lease ends: the lease
// length counted from just before the acquiring (or last extending)
// command was sent, on the context's clock (less the drift allowance for
// a RedlockLock). The server's expiry is never earlier, unless clocks
// drift. It is the zero time once a RedlockLock was released.
func (h hold) Expires() time.Time { return h.h.Expires() }

// Waits is how many attempts failed before the hold was granted.
func (h hold) Waits() int { return h.h.Waits() }
