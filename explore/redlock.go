package explore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
)

// DefaultNodes is the number of nodes of a Redlock target unless told
// otherwise.
const DefaultNodes = 3

// Redlock returns locking.RedlockMutex over nodes independent servers
// (1 to MaxNodes), without fencing. Node i (from 1) is the explorer's
// server's logical database base+i, where base is the database the
// explorer was given: each client sends every SET NX PX and every release
// to every node through a go-redis client of its own, and the scheduler
// orders each of them. The clients' hold (what each believes it holds)
// ends when the lock's validity does: the acquisition's start plus the
// lease, less Redlock's drift allowance, on the virtual clock.
//
// Without node faults it keeps mutual exclusion. With FaultNodeRestart
// (a node without persistence restarts empty) or FaultClockJump (a
// node's clock jumps forward, so a lease on it runs out early), two
// clients can each hold a majority: Kleppmann's arguments against
// Redlock.
func Redlock(nodes int) (*Target, error) {
	if nodes < 1 || nodes > MaxNodes {
		return nil, fmt.Errorf("%w: %d: must be 1 to %d", errNodes, nodes, MaxNodes)
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
	return &Target{Name: "redlock", About: about,
		Property: MutualExclusion, Clients: 2, Checks: lockChecks, nodes: nodes,
		newLock: func(_ redis.UniversalClient, c *client, m Model, ns string) locker {
			var rdbs []redis.UniversalClient
			for _, r := range c.w.t.nodeSet.clients[c.idx] {
				rdbs = append(rdbs, r)
			}
			ttl := c.w.dilate(m.TTL)
			return &redlockLocker{
				r:   locking.NewRedlockMutex(rdbs, lockKey(ns), ttl),
				clk: clock{c},
				ttl: ttl,
			}
		},
		lockKeys: oneLockKey}, nil
}

// Nodes is the number of independent servers the target's lock runs on;
// 0 for the one server.
func (t *Target) Nodes() int { return t.nodes }

// redlockLocker adapts locking.RedlockMutex; ttl is dilated.
type redlockLocker struct {
	r   *locking.RedlockMutex
	clk clock
	ttl time.Duration
}

type redlockHeld struct {
	l   *locking.RedlockLock
	clk clock
	ttl time.Duration
	// last is the validity's end as last read: Release clears the hold's
	// before its commands are sent, while the client still holds it.
	// Read and written under the world's lock.
	last time.Duration
}

func (r *redlockLocker) acquire(ctx context.Context, _ bool) (held, error) {
	l, err := r.r.TryAcquire(ctx)
	if err != nil {
		return nil, err
	}
	h := &redlockHeld{l: l, clk: r.clk, ttl: r.ttl}
	w := r.clk.c.w
	w.mu.Lock()
	h.last = w.since(l.Expires())
	w.mu.Unlock()
	return h, nil
}

func (h *redlockHeld) release(ctx context.Context) error { return h.l.Release(ctx) }
func (h *redlockHeld) extend(ctx context.Context) error  { return h.l.Extend(ctx, h.ttl) }

// end is the validity's end; w.mu is held.
func (h *redlockHeld) end() time.Duration {
	if e := h.l.Expires(); !e.IsZero() {
		h.last = h.clk.c.w.since(e)
	}
	return h.last
}
