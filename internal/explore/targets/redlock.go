package targets

import (
	"context"
	"fmt"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/redis/go-redis/v9"
)

// DefaultNodes is the number of nodes of a Redlock target unless told
// otherwise.
const DefaultNodes = 3

// Redlock returns locking.RedlockMutex over nodes independent servers
// (1 to sched.MaxNodes, sched.ErrNodes otherwise), without fencing. Node
// i (from 1) is the explorer's server's logical database base+i, where
// base is the database the explorer was given: each client sends every
// SET NX PX and every release to every node through a go-redis client of
// its own, and the scheduler orders each of them. The clients' hold (what
// each believes it holds) ends when the lock's validity does: the
// acquisition's start plus the lease, less Redlock's drift allowance, on
// the virtual clock.
//
// Without node faults it keeps mutual exclusion. With
// action.FaultNodeRestart (a node without persistence restarts empty) or
// action.FaultClockJump (a node's clock jumps forward, so a lease on it
// runs out early), two clients can each hold a majority: Kleppmann's
// arguments against Redlock.
func Redlock(nodes int) (*sched.Target, error) {
	if nodes < 1 || nodes > sched.MaxNodes {
		return nil, fmt.Errorf("%w: %d: must be 1 to %d", sched.ErrNodes, nodes, sched.MaxNodes)
	}
	about := fmt.Sprintf(
		"locking.RedlockMutex over %d nodes (a majority of %d; logical databases 1 to %d of "+
			"one redis-server), no fencing",
		nodes, nodes/2+1, nodes,
	)
	if nodes == 1 {
		about = "locking.RedlockMutex over 1 node (logical database 1 of one redis-server), no " +
			"fencing"
	}
	return &sched.Target{Name: "redlock", About: about,
		Property: result.MutualExclusion, Clients: 2, Checks: lockChecks,
		Lock: &sched.Lock{New: newRedlock, Keys: sched.SingleLockKey, Nodes: nodes}}, nil
}

// newRedlock is client c's Redlock over its nodes.
func newRedlock(c *sched.Client) sched.Locker {
	var rdbs []redis.UniversalClient
	for _, r := range c.Nodes() {
		rdbs = append(rdbs, r)
	}
	ttl := c.Lease()
	return &redlockLocker{
		r:   locking.NewRedlockMutex(rdbs, sched.LockKey(c.Prefix()), ttl),
		c:   c,
		ttl: ttl,
	}
}

// redlockLocker adapts locking.RedlockMutex for client c; ttl is dilated.
type redlockLocker struct {
	r   *locking.RedlockMutex
	c   *sched.Client
	ttl time.Duration
}

type redlockHeld struct {
	l   *locking.RedlockLock
	c   *sched.Client
	ttl time.Duration
	// last is the validity's end as last read: Release clears the hold's
	// before its commands are sent, while the client still holds it.
	// Written under the runtime's lock, once the hold is recorded.
	last time.Duration
}

func (r *redlockLocker) Acquire(ctx context.Context, _ bool) (sched.Held, error) {
	l, err := r.r.TryAcquire(ctx)
	if err != nil {
		return nil, err
	}
	h := &redlockHeld{l: l, c: r.c, ttl: r.ttl}
	// Written before the runtime records the hold, read by it after.
	h.last = r.c.Since(l.Expires())
	return h, nil
}

func (h *redlockHeld) Release(ctx context.Context) error { return h.l.Release(ctx) }

func (h *redlockHeld) Extend(ctx context.Context) error { return h.l.Extend(ctx, h.ttl) }

// End is the validity's end; the runtime calls it under its lock.
func (h *redlockHeld) End() time.Duration {
	if e := h.l.Expires(); !e.IsZero() {
		h.last = h.c.Since(e)
	}
	return h.last
}
