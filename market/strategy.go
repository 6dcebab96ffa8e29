package market

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/watchtx"
)

// Strategy is how List and Purchase keep concurrent clients apart.
type Strategy string

// The strategies. Each keeps every audited invariant when all clients of a
// market use it; mixing strategies on one market is not safe (a lock
// strategy does not WATCH the market, so it does not see a commit made
// without its lock).
const (
	// Watch is optimistic: WATCH the keys read, MULTI/EXEC the writes, and
	// start again when EXEC is aborted (book 4.4).
	Watch Strategy = "watch"
	// Coarse takes one lock over the whole market, and WATCHes the buyer
	// (book 6.2.3).
	Coarse Strategy = "coarse"
	// Fine takes one lock per listing, and WATCHes the buyer (book 6.2.4).
	Fine Strategy = "fine"
	// Lua runs each operation as one server-side script (book 11.3.2).
	Lua Strategy = "lua"
)

// Strategies lists every strategy in the book's order.
var Strategies = []Strategy{Watch, Coarse, Fine, Lua}

// ParseStrategy parses a strategy name.
func ParseStrategy(s string) (Strategy, error) {
	for _, st := range Strategies {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("%w: unknown strategy %q (want watch, coarse, fine or lua)", ErrInvalid, s)
}

// Cost is what one operation paid to get done.
type Cost struct {
	// Retries is how many EXECs were aborted by WATCH before it finished.
	Retries int `json:"retries"`
	// LockWaits is how many lock attempts failed before the lock was held.
	LockWaits int `json:"lock_waits"`
	// Wait is the wall time from the call until it returned.
	Wait time.Duration `json:"-"`
	// LockLost is set when the lock's lease had expired by the time it was
	// released: the operation ran, for a while, without mutual exclusion.
	LockLost bool `json:"lock_lost,omitempty"`
}

// List moves item from seller's inventory to the market at price.
func (m *Market) List(ctx context.Context, s Strategy, seller, item string, price int64) (cost Cost, err error) {
	start := time.Now()
	defer func() { cost.Wait = time.Since(start) }()
	if err := ValidID("seller", seller); err != nil {
		return cost, err
	}
	if err := ValidID("item", item); err != nil {
		return cost, err
	}
	if err := ValidPrice(price); err != nil {
		return cost, err
	}
	ctx, cancel := context.WithTimeout(ctx, m.listTimeout)
	defer cancel()
	o := &listOp{m: m, seller: seller, item: item, price: price}
	switch s {
	case Watch:
		err = m.runWatch(ctx, s, "list", o, &cost, m.keys.Inventory(seller))
	case Coarse, Fine:
		if m.lockFunc == nil {
			err = m.runLocked(ctx, s, "list", m.lockKey(s, item, seller), o, &cost)
			break
		}
		err = m.withLock(ctx, s, item, seller, &cost, func(l Lease) error {
			if !m.fenced(l) {
				return m.listTx(ctx, m.rdb, s, seller, item, price)
			}
			var err error
			cost.Retries, err = m.watchRun(ctx, func(tx *redis.Tx) error {
				if err := checkLease(ctx, tx, l); err != nil {
					return err
				}
				return m.listTx(ctx, tx, s, seller, item, price)
			}, l.Key)
			return err
		})
	case Lua:
		err = m.listLua(ctx, seller, item, price)
	default:
		_, err = ParseStrategy(string(s))
	}
	if err == nil {
		m.ledger.listed(item, price)
	}
	return cost, err
}

// Purchase buys seller's listing of item for buyer, if it is still listed
// at price and buyer can afford it: the price moves from buyer to seller and
// the item from the market to buyer's inventory, all or nothing.
func (m *Market) Purchase(ctx context.Context, s Strategy, buyer, seller, item string, price int64) (cost Cost, err error) {
	start := time.Now()
	defer func() { cost.Wait = time.Since(start) }()
	if err := ValidID("buyer", buyer); err != nil {
		return cost, err
	}
	if err := ValidID("seller", seller); err != nil {
		return cost, err
	}
	if err := ValidID("item", item); err != nil {
		return cost, err
	}
	if err := ValidPrice(price); err != nil {
		return cost, err
	}
	if buyer == seller {
		return cost, fmt.Errorf("%w: buyer and seller are both %s", ErrInvalid, buyer)
	}
	ctx, cancel := context.WithTimeout(ctx, m.buyTimeout)
	defer cancel()
	o := &purchaseOp{m: m, buyer: buyer, seller: seller, item: item, price: price}
	switch s {
	case Watch:
		// Book 4.4: WATCH the market and the buyer.
		err = m.runWatch(ctx, s, "purchase", o, &cost, m.keys.Market(), m.keys.User(buyer))
	case Coarse, Fine:
		// Under the lock only the buyer's funds can change behind our back
		// (the same buyer buying elsewhere), so only they are WATCHed.
		if m.lockFunc == nil {
			err = m.runLocked(ctx, s, "purchase", m.lockKey(s, item, seller), o, &cost, m.keys.User(buyer))
			break
		}
		err = m.withLock(ctx, s, item, seller, &cost, func(l Lease) error {
			keys := []string{m.keys.User(buyer)}
			fenced := m.fenced(l)
			if fenced {
				keys = append(keys, l.Key)
			}
			var err error
			cost.Retries, err = m.watchRun(ctx, func(tx *redis.Tx) error {
				if fenced {
					if err := checkLease(ctx, tx, l); err != nil {
						return err
					}
				}
				return m.purchaseTx(ctx, tx, s, buyer, seller, item, price)
			}, keys...)
			return err
		})
	case Lua:
		err = m.purchaseLua(ctx, buyer, seller, item, price)
	default:
		_, err = ParseStrategy(string(s))
	}
	if err == nil {
		m.ledger.sold(buyer, seller, item, price)
	}
	return cost, err
}

// watchRun runs a WATCH transaction until the context's time runs out.
func (m *Market) watchRun(ctx context.Context, fn func(*redis.Tx) error, keys ...string) (int, error) {
	retries, err := watchtx.Run(ctx, m.rdb, watchtx.Options{}, fn, keys...)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w: transaction aborted %d times: %w", ErrContended, retries, err)
	}
	return retries, err
}

// lockKey is the lock of a Coarse (the market's) or Fine (the listing's)
// operation.
func (m *Market) lockKey(s Strategy, item, seller string) string {
	if s == Fine {
		return m.keys.ItemLock(item, seller)
	}
	return m.keys.MarketLock()
}

// withLock runs fn while holding the market lock (Coarse) or the listing's
// lock (Fine), taken with the market's LockFunc (by default a
// locking.Mutex).
func (m *Market) withLock(ctx context.Context, s Strategy, item, seller string, cost *Cost, fn func(Lease) error) error {
	key := m.lockKey(s, item, seller)
	acquire := m.lockFunc
	if acquire == nil {
		acquire = m.mutexLock
	}
	l, err := acquire(ctx, key, m.lockTTL)
	if err != nil {
		if errors.Is(err, locking.ErrNotAcquired) {
			return fmt.Errorf("%w: %w", ErrContended, err)
		}
		return err
	}
	cost.LockWaits = l.Waits
	ferr := fn(l)
	// Release even if ctx has ended, but do not wait long for it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if l.Release != nil {
		if err := l.Release(rctx); errors.Is(err, locking.ErrNotHeld) {
			cost.LockLost = true
		}
	}
	if errors.Is(ferr, ErrLockLost) {
		cost.LockLost = true
	}
	return ferr
}

// cmdable is what the list transaction needs: a *redis.Tx under WATCH, or
// the plain client under a lock.
type cmdable interface {
	SIsMember(ctx context.Context, key string, member any) *redis.BoolCmd
	TxPipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// listTx and purchaseTx are the book's forms of the lock strategies'
// critical sections, used with a LockFunc other than the default mutex:
// read (under WATCH when c is a *redis.Tx), check, then MULTI/EXEC.
func (m *Market) listTx(ctx context.Context, c cmdable, s Strategy, seller, item string, price int64) error {
	o := &listOp{m: m, seller: seller, item: item, price: price}
	o.owned = c.SIsMember(ctx, m.keys.Inventory(seller), item)
	if err := o.check(); err != nil {
		return err
	}
	if m.beforeCommit != nil {
		m.beforeCommit(ctx, s, "list")
	}
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		o.write(ctx, p)
		return nil
	})
	return err
}

func (m *Market) purchaseTx(ctx context.Context, tx *redis.Tx, s Strategy, buyer, seller, item string, price int64) error {
	o := &purchaseOp{m: m, buyer: buyer, seller: seller, item: item, price: price}
	_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
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
		m.beforeCommit(ctx, s, "purchase")
	}
	_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		o.write(ctx, p)
		return nil
	})
	return err
}

var (
	listScript = redis.NewScript(`
-- KEYS: seller inventory, market; ARGV: item, member, price
if redis.call('sismember', KEYS[1], ARGV[1]) == 0 then return 'item_not_owned' end
redis.call('zadd', KEYS[2], ARGV[3], ARGV[2])
redis.call('srem', KEYS[1], ARGV[1])
return 'ok'`)

	purchaseScript = redis.NewScript(`
-- KEYS: market, buyer hash, seller hash, buyer inventory
-- ARGV: member, item, price
local listed = redis.call('zscore', KEYS[1], ARGV[1])
if not listed then return 'listing_not_found' end
local price = tonumber(ARGV[3])
if tonumber(listed) ~= price then return 'price_changed' end
local funds = redis.call('hget', KEYS[2], 'funds')
if not funds then return 'user_not_found' end
if tonumber(funds) < price then return 'insufficient_funds' end
redis.call('hincrby', KEYS[3], 'funds', ARGV[3])
redis.call('hincrby', KEYS[2], 'funds', '-' .. ARGV[3])
redis.call('sadd', KEYS[4], ARGV[2])
redis.call('zrem', KEYS[1], ARGV[1])
return 'ok'`)
)

func (m *Market) listLua(ctx context.Context, seller, item string, price int64) error {
	if m.beforeCommit != nil {
		m.beforeCommit(ctx, Lua, "list")
	}
	res, err := listScript.Run(ctx, m.rdb, []string{m.keys.Inventory(seller), m.keys.Market()},
		item, Member(item, seller), price).Text()
	if err != nil {
		return err
	}
	if err := scriptResult(res); err != nil {
		return fmt.Errorf("%s by %s: %w", item, seller, err)
	}
	return nil
}

func (m *Market) purchaseLua(ctx context.Context, buyer, seller, item string, price int64) error {
	if m.beforeCommit != nil {
		m.beforeCommit(ctx, Lua, "purchase")
	}
	k := m.keys
	res, err := purchaseScript.Run(ctx, m.rdb,
		[]string{k.Market(), k.User(buyer), k.User(seller), k.Inventory(buyer)},
		Member(item, seller), item, price).Text()
	if err != nil {
		return err
	}
	if err := scriptResult(res); err != nil {
		return fmt.Errorf("%s from %s for %s: %w", item, seller, buyer, err)
	}
	return nil
}
