package market

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/watchtx"
)

// This file holds the round-trip-lean forms of the strategies. They do the
// same reads, checks and writes as the book's versions, but send together
// what can travel together:
//
//   - watch: the WATCH goes in the same pipeline as the reads, so a
//     successful operation is two round trips (reads, MULTI/EXEC) instead
//     of three;
//   - coarse and fine with the default mutex: the lock's SET NX PX, the
//     WATCH and the reads go in one pipeline, and the lock's release (the
//     usual compare-and-delete script) is queued inside the MULTI/EXEC of
//     the commit, so an uncontended operation is two round trips instead
//     of four or five, and the commit and the release apply together. If
//     EXEC is aborted, the release inside it did not run either: the lock
//     is still held for the retry.

// listOp and purchaseOp are the reads, checks and writes of one operation,
// shared by every strategy but Lua.
type listOp struct {
	m            *Market
	seller, item string
	price        int64
	owned        *redis.BoolCmd
}

func (o *listOp) read(ctx context.Context, p redis.Pipeliner) {
	o.owned = p.SIsMember(ctx, o.m.keys.Inventory(o.seller), o.item)
}

func (o *listOp) check() error {
	owned, err := o.owned.Result()
	if err != nil {
		return err
	}
	if !owned {
		return fmt.Errorf("%s by %s: %w", o.item, o.seller, ErrItemNotOwned)
	}
	return nil
}

func (o *listOp) write(ctx context.Context, p redis.Pipeliner) {
	k := o.m.keys
	p.ZAdd(ctx, k.Market(), redis.Z{Score: float64(o.price), Member: Member(o.item, o.seller)})
	p.SRem(ctx, k.Inventory(o.seller), o.item)
}

type purchaseOp struct {
	m                   *Market
	buyer, seller, item string
	price               int64
	score               *redis.FloatCmd
	funds               *redis.StringCmd
}

func (o *purchaseOp) read(ctx context.Context, p redis.Pipeliner) {
	o.score = p.ZScore(ctx, o.m.keys.Market(), Member(o.item, o.seller))
	o.funds = p.HGet(ctx, o.m.keys.User(o.buyer), "funds")
}

func (o *purchaseOp) check() error {
	listed, err := o.score.Result()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%s from %s: %w", o.item, o.seller, ErrListingNotFound)
	}
	if err != nil {
		return err
	}
	if int64(listed) != o.price {
		return fmt.Errorf("%s from %s is listed at %d, not %d: %w", o.item, o.seller, int64(listed), o.price, ErrPriceChanged)
	}
	f, err := o.funds.Result()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("buyer %s: %w", o.buyer, ErrUserNotFound)
	}
	if err != nil {
		return err
	}
	have, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		return fmt.Errorf("buyer %s funds %q: %w", o.buyer, f, err)
	}
	if have < o.price {
		return fmt.Errorf("%s has %d, needs %d: %w", o.buyer, have, o.price, ErrInsufficientFunds)
	}
	return nil
}

func (o *purchaseOp) write(ctx context.Context, p redis.Pipeliner) {
	k := o.m.keys
	p.HIncrBy(ctx, k.User(o.seller), "funds", o.price)
	p.HIncrBy(ctx, k.User(o.buyer), "funds", -o.price)
	p.SAdd(ctx, k.Inventory(o.buyer), o.item)
	p.ZRem(ctx, k.Market(), Member(o.item, o.seller))
}

// op is what the generic runners need of listOp and purchaseOp.
type op interface {
	read(ctx context.Context, p redis.Pipeliner)
	check() error
	write(ctx context.Context, p redis.Pipeliner)
}

// pipelinedErr keeps the first error of a pipeline that is not redis.Nil
// (a missing listing or user is a reply the check reads, not a failure).
func pipelinedErr(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// runWatch is the watch strategy: WATCH keys and read in one round trip,
// check, then MULTI/EXEC the writes; start again when EXEC is aborted.
func (m *Market) runWatch(ctx context.Context, s Strategy, name string, o op, cost *Cost, keys ...string) error {
	var err error
	cost.Retries, err = watchtx.RunPiped(ctx, m.rdb, watchtx.Options{}, keys[0], func(tx *redis.Tx) error {
		_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			watchtx.Watch(ctx, p, keys...)
			o.read(ctx, p)
			return nil
		})
		if err := pipelinedErr(err); err != nil {
			return err
		}
		if err := o.check(); err != nil {
			return err
		}
		if m.beforeCommit != nil {
			m.beforeCommit(ctx, s, name)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			o.write(ctx, p)
			return nil
		})
		return err
	})
	return contended(ctx, cost.Retries, err)
}

// contended turns the end of an operation's time into ErrContended.
func contended(ctx context.Context, retries int, err error) error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) &&
		!errors.Is(err, ErrContended) {
		return fmt.Errorf("%w: aborted %d times: %w", ErrContended, retries, err)
	}
	return err
}

// runLocked is the coarse or fine strategy with the default mutex: take
// the lock on key (SET key token NX PX ttl), WATCH watch (plus the lock
// key under fencing) and read, all in the first round trip; check; then
// MULTI, the writes, the lock's release, EXEC. While the lock is taken by
// someone else it polls with SET NX alone, backing off, and reads once it
// holds the lock.
func (m *Market) runLocked(ctx context.Context, s Strategy, name, key string, o op, cost *Cost, watch ...string) error {
	token := locking.NewToken()
	if m.fencing {
		watch = append(watch, key)
	}
	held, released := false, false
	defer func() {
		if held && !released {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			if err := locking.ReleaseToken(rctx, m.rdb, key, token); errors.Is(err, locking.ErrNotHeld) {
				cost.LockLost = true
			}
		}
	}()
	var fence *redis.StringCmd
	read := func(p redis.Pipeliner) {
		if len(watch) > 0 {
			watchtx.Watch(ctx, p, watch...)
		}
		if m.fencing {
			fence = p.Get(ctx, key)
		}
		o.read(ctx, p)
	}
	err := watchtx.Conn(ctx, m.rdb, key, func(tx *redis.Tx) error {
		// Take the lock; the first attempt also watches and reads.
		for n := 0; !held; n++ {
			var set *redis.BoolCmd
			_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				set = p.SetNX(ctx, key, token, m.lockTTL)
				if n == 0 {
					read(p)
				}
				return nil
			})
			if err := pipelinedErr(err); err != nil {
				return err
			}
			if set.Val() {
				held = true
				cost.LockWaits = n
				if n > 0 {
					// Watch afresh: changes seen by the first attempt's
					// WATCH while we waited must not abort our EXEC.
					_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
						watchtx.Unwatch(ctx, p)
						read(p)
						return nil
					})
					if err := pipelinedErr(err); err != nil {
						return err
					}
				}
				break
			}
			if err := locking.Sleep(ctx, m.backoff.Delay(n)); err != nil {
				return fmt.Errorf("%w: %s after %d attempts: %w", ErrContended, key, n+1, err)
			}
		}
		for {
			var err error
			if m.fencing && fence.Val() != token {
				err = fmt.Errorf("%s: %w", key, ErrLockLost)
			} else {
				err = o.check()
			}
			if err != nil {
				// Give the lock back in the same round trip as the UNWATCH.
				var rel *redis.Cmd
				_, perr := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
					watchtx.Unwatch(ctx, p)
					rel = locking.QueueRelease(ctx, p, key, token)
					return nil
				})
				if perr == nil {
					released = true
					if n, _ := rel.Int(); n == 0 {
						cost.LockLost = true
					}
				}
				return watchtx.Unwatched(err)
			}
			if m.beforeCommit != nil {
				m.beforeCommit(ctx, s, name)
			}
			var rel *redis.Cmd
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				o.write(ctx, p)
				rel = locking.QueueRelease(ctx, p, key, token)
				return nil
			})
			if err == nil {
				released = true
				if n, _ := rel.Int(); n == 0 {
					cost.LockLost = true
				}
				return nil
			}
			if !errors.Is(err, redis.TxFailedErr) {
				return err
			}
			// A watched key changed: under fencing perhaps the lock itself.
			cost.Retries++
			if err := ctx.Err(); err != nil {
				return err
			}
			_, err = tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				read(p)
				return nil
			})
			if err := pipelinedErr(err); err != nil {
				return err
			}
		}
	})
	if errors.Is(err, ErrLockLost) {
		cost.LockLost = true
	}
	return contended(ctx, cost.Retries, err)
}
