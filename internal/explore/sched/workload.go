package sched

// The runtime's own workload: each client takes the target's lock,
// runs its critical section and releases it; and what is checked of the
// target at a schedule's end.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/redis/go-redis/v9"
)

// work is what one client runs: Iterations times, take the lock
// (retrying after Retry of virtual time, Attempts times at most), do the
// critical section, release the lock.
func (t *Target) work(ctx context.Context, c *clientState, m action.Model) error {
	if t.Workload.Run != nil {
		err := t.Workload.Run(ctx, &Client{c: c, m: m})
		c.world.mu.Lock()
		if err == nil && !c.gaveUp {
			c.done = true
		}
		c.world.mu.Unlock()
		return err
	}
	m.TTL = m.LeaseOf(c.Index)
	lk := t.Lock.New(&Client{c: c, m: m})
	clk := Clock{c}
	write := t.Writes(c.Index, m.Clients)
	for range m.Iterations {
		if err := clk.AwaitStart(ctx); err != nil {
			return err
		}
		c.world.mu.Lock()
		c.wanted = true
		c.world.mu.Unlock()
		var h Held
		for n := 0; ; n++ {
			var err error
			h, err = lk.Acquire(ctx, write)
			if err == nil {
				break
			}
			if !errors.Is(err, locking.ErrNotAcquired) {
				return err
			}
			if n+1 >= m.Tries() {
				if q, ok := lk.(Quitter); ok {
					if err := q.GiveUp(ctx, write); err != nil {
						return err
					}
				}
				c.world.mu.Lock()
				c.gaveUp = true
				c.world.mu.Unlock()
				return nil
			}
			if err := clk.Sleep(ctx, c.world.Dilate(m.Retry)); err != nil {
				return err
			}
		}
		c.world.mu.Lock()
		c.holding = &hold{Write: write, End: h.End, held: h}
		c.got++
		c.world.mu.Unlock()
		inner, err := t.nest(ctx, lk, write)
		if err != nil {
			return err
		}
		work, stop := ctx, func() {}
		in := h
		if inner != nil {
			in = inner
		}
		if t.Lock.Watchdog {
			if e, ok := h.(interface{ Extender() locking.Extender }); ok {
				work, stop = locking.KeepAlive(ctx, e.Extender(), c.world.Dilate(m.TTL))
			}
		} else if m.RenewEvery > 0 {
			work, stop = renewEvery(ctx, clk, in, m.RenewEvery)
			if t.Lock.Extend {
				in = renewedHold{in}
			}
		}
		err = t.critical(work, c, in, write)
		stop()
		if err != nil {
			return err
		}
		if inner != nil {
			if err := inner.Release(ctx); err != nil && !errors.Is(err, locking.ErrNotHeld) {
				return err
			}
		}
		c.world.mu.Lock()
		c.endHold = true
		c.world.mu.Unlock()
		if err := h.Release(ctx); err != nil && !errors.Is(err, locking.ErrNotHeld) {
			return err
		}
		c.world.mu.Lock()
		c.holding, c.endHold = nil, false
		c.world.mu.Unlock()
	}
	c.world.mu.Lock()
	c.done = true
	c.world.mu.Unlock()
	return nil
}

// critical is the critical section: for a lock, read the shared counter
// and write it back plus one (a lost update shows as a counter below the
// number of sections completed); for a read-write lock, a reader reads x
// and y, which the writer increments together, and finds them equal.
func (t *Target) critical(ctx context.Context, c *clientState, h Held, write bool) error {
	rdb, ns := c.Redis, t.ns
	if t.Lock.ReadWrite {
		if write {
			if ctx.Err() != nil {
				return nil
			}
			_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, ns+ReadWriteKeyX)
				p.Incr(ctx, ns+ReadWriteKeyY)
				return nil
			})
			if err == nil {
				c.world.mu.Lock()
				c.completed++
				c.world.mu.Unlock()
			}
			return err
		}
		x, err := getInt(ctx, rdb, ns+ReadWriteKeyX)
		if err != nil {
			return err
		}
		y, err := getInt(ctx, rdb, ns+ReadWriteKeyY)
		if err != nil {
			return err
		}
		c.world.mu.Lock()
		c.completed++
		if x != y {
			c.world.torn = append(
				c.world.torn,
				fmt.Sprintf(
					"reader %s read x=%d and y=%d: a write landed between its reads", c.Name, x, y,
				),
			)
		}
		c.world.mu.Unlock()
		return nil
	}
	if t.Lock.Fenced {
		l := h.(interface{ Lock() *locking.Lock }).Lock()
		// Lock.Held's check, pipelined with the read: the write commits
		// only while the lock key still holds this hold's token.
		err := rdb.Watch(ctx, func(tx *redis.Tx) error {
			var own, cur *redis.StringCmd
			if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				own = p.Get(ctx, l.Key())
				cur = p.Get(ctx, ns+CounterKey)
				return nil
			}); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if v, err := own.Result(); err != nil || v != l.Token() {
				return locking.ErrNotHeld
			}
			n, _ := cur.Int64()
			if err := t.maybeExtend(ctx, h); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, ns+CounterKey, n+1, 0)
				return nil
			})
			return err
		}, l.Key())
		switch {
		case err == nil:
			c.world.mu.Lock()
			c.completed++
			c.world.mu.Unlock()
		case errors.Is(err, locking.ErrNotHeld), errors.Is(err, redis.TxFailedErr):
			// Refused: the write of a holder that lost the lock.
		default:
			return err
		}
		return nil
	}
	n, err := getInt(ctx, rdb, ns+CounterKey)
	if err != nil {
		return err
	}
	if err := t.maybeExtend(ctx, h); err != nil {
		if errors.Is(err, locking.ErrNotHeld) {
			return nil // the client learns it lost the lock, and stops
		}
		return err
	}
	if ctx.Err() != nil {
		return nil // the watchdog found the lock lost
	}
	if err := rdb.Set(ctx, ns+CounterKey, n+1, 0).Err(); err != nil {
		return err
	}
	c.world.mu.Lock()
	c.completed++
	c.world.mu.Unlock()
	return nil
}

func (t *Target) maybeExtend(ctx context.Context, h Held) error {
	if !t.Lock.Extend {
		return nil
	}
	return h.Extend(ctx)
}

// checkEnd checks the properties that are read at the end of a schedule.
func (t *Target) checkEnd(ctx context.Context, e *Explorer, w *world) ([]result.Violation, error) {
	snap := w.Snapshot()
	if t.Workload.End != nil {
		return t.Workload.End(ctx, e, snap)
	}
	var out []result.Violation
	completed := 0
	for _, c := range snap.Clients {
		completed += c.Completed
	}
	// resource
	if t.lock().ReadWrite {
		w.mu.Lock()
		torn := slices.Clone(w.torn)
		w.mu.Unlock()
		if len(torn) > 0 {
			out = append(out, result.Violation{Property: result.Resource, Message: torn[0]})
		}
	}
	// The end's reads (the counter, the lock keys' leases for noExpiry)
	// go in one round trip; each command's error is its own, read below.
	var keys []string
	var ttls []*redis.DurationCmd
	var counter *redis.StringCmd
	_, _ = e.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		if !t.lock().ReadWrite {
			counter = p.Get(ctx, t.ns+CounterKey)
		}
		if t.lock().Liveness == nil && t.lock().Keys != nil {
			keys = t.Lock.Keys(t.ns)
			for _, key := range keys {
				ttls = append(ttls, p.PTTL(ctx, key))
			}
		}
		return nil
	})
	if counter != nil {
		n, err := readInt(t.ns+CounterKey, counter.Val(), counter.Err())
		if err != nil {
			return nil, err
		}
		if n != int64(completed) {
			out = append(out, result.Violation{Property: result.Resource, Message: fmt.Sprintf(
				"lost update: %d critical sections completed their write, the counter says "+
					"%d", completed, n)})
		}
	}
	// liveness
	if l := t.lock(); l.Liveness != nil {
		vs, err := l.Liveness(ctx, e, snap)
		return append(out, vs...), err
	}
	v, err := t.noExpiry(keys, ttls, snap)
	if v != nil {
		out = append(out, *v)
	}
	return out, err
}

// noExpiry is the liveness violation of a lock key with no expiry that no
// live client holds while a live client gave up waiting for it, if any:
// keys are the lock's keys, ttls their PTTLs read at the end.
func (t *Target) noExpiry(
	keys []string, ttls []*redis.DurationCmd, snap Snapshot,
) (*result.Violation, error) {
	if len(ttls) == 0 {
		return nil, nil
	}
	heldByLive, waiting := false, ""
	var dead []string
	for _, c := range snap.Clients {
		if c.Crashed {
			dead = append(dead, c.Name)
			continue
		}
		heldByLive = heldByLive || c.Hold != nil
		if c.Wanted && c.GaveUp && waiting == "" {
			waiting = c.Name
		}
	}
	for i, key := range keys {
		ttl, err := ttls[i].Result()
		if err != nil {
			return nil, err
		}
		if ttl != -1 {
			continue // no key (-2), or a lease that will run out
		}
		if !heldByLive && waiting != "" {
			who := "nobody alive holds it"
			if len(dead) > 0 {
				who = strings.Join(dead, ", ") + " crashed"
			}
			return &result.Violation{Property: result.Liveness, Message: fmt.Sprintf(
				"%s has no expiry and %s; %s waited in vain (it would wait forever)", t.Short(key),
				who, waiting,
			)}, nil
		}
	}
	return nil, nil
}

// getInt reads key as an integer, 0 when there is none.
func getInt(ctx context.Context, rdb redis.UniversalClient, key string) (int64, error) {
	v, err := rdb.Get(ctx, key).Result()
	return readInt(key, v, err)
}

// readInt reads a GET of key, its reply v or its error err, as getInt
// does.
func readInt(key, v string, err error) (int64, error) {
	switch {
	case errors.Is(err, redis.Nil):
		return 0, nil
	case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
		return 0, fmt.Errorf("%w: %s holds another type than a string; the explorer wants an "+
			"integer there (its critical sections write it), or no key", ErrUnreadable, key)
	case err != nil:
		return 0, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return 0, fmt.Errorf("%w: %s holds %q; the explorer wants an integer there (its critical "+
			"sections write it), or no key", ErrUnreadable, key, rediscmd.Bound(v, 64))
	}
	return n, nil
}

// ErrUnreadable is returned when a key of the workload (the counter, or
// a read-write lock's x and y) holds what the explorer cannot read as the
// integer its critical sections write: code under test wrote it. The
// message names the key and shows the value bounded.
var ErrUnreadable = errors.New("explore: a key of the workload holds what the explorer cannot read")
