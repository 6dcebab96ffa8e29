package market

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// An op is the reads, checks and writes of one List or Purchase, the part
// every strategy but Lua shares: read (after a WATCH, or under a lock),
// check what was read, then queue the writes inside MULTI/EXEC. The Lua
// scripts (lua.go) do the same steps on the server.
//
// read queues its reads in steps, each the commands of one round trip of
// the book's listings, in their order: it calls step once per round trip
// with a function that queues that round trip's commands. The lean client
// form sends every step in one pipeline, the book form each step in a
// round trip of its own (see ClientForm). Reads the book does not have
// travel with the book's last one, so they cost the book form no round
// trip. The replies, errors included, are read by check.
type op interface {
	read(ctx context.Context, step func(queue func(p redis.Pipeliner)))
	check() error
	write(ctx context.Context, p redis.Pipeliner)
}

// opRecord is the idempotency record of an operation with an ID (see
// OpID): read with the operation's other reads, checked first, and
// written with its writes, so a repeat finds it and applies nothing.
type opRecord struct {
	keys   Keys
	id     string // "" when the operation has none
	ttl    time.Duration
	what   string // the operation and its arguments, e.g. "purchase ann sam cup 10"
	strat  Strategy
	stored *redis.StringCmd
}

func (r *opRecord) read(ctx context.Context, p redis.Pipeliner) {
	if r.id != "" {
		r.stored = p.Get(ctx, r.keys.Op(r.id))
	}
}

// check returns errReplayed if the operation was applied before, and
// ErrOpMismatch if its ID was used for another operation.
func (r *opRecord) check() error {
	if r.id == "" {
		return nil
	}
	v, err := r.stored.Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return err
	}
	return r.compare(v)
}

// compare judges a stored record: errReplayed when it is this operation's.
func (r *opRecord) compare(stored string) error {
	what, strat, _ := strings.Cut(stored, "|")
	if what != r.what {
		return fmt.Errorf("operation %s was %q, not %q: %w", r.id, what, r.what, ErrOpMismatch)
	}
	return replayed{Strategy(strat)}
}

// watch adds the record's key to the keys a transaction WATCHes: two
// operations with one ID that run at once cannot both commit.
func (r *opRecord) watch(keys ...string) []string {
	if r.id != "" {
		keys = append(keys, r.keys.Op(r.id))
	}
	return keys
}

func (r *opRecord) write(ctx context.Context, p redis.Pipeliner) {
	if r.id != "" {
		p.Set(ctx, r.keys.Op(r.id), r.value(), r.ttl)
	}
}

func (r *opRecord) value() string { return r.what + "|" + string(r.strat) }

// scriptValue is the record a script writes, or "" for none.
func (r *opRecord) scriptValue() string {
	if r.id == "" {
		return ""
	}
	return r.value()
}

// replayed is the outcome of an operation whose ID was applied before: the
// operation is done, by the strategy named, and nothing was written now.
type replayed struct{ strategy Strategy }

func (replayed) Error() string { return "market: operation applied before" }

// listOp moves item from seller's inventory to the market at price.
type listOp struct {
	keys         Keys
	seller, item string
	price        int64
	rec          opRecord
	owned        *redis.BoolCmd
}

// read is listing 4.5's one read, SISMEMBER.
func (o *listOp) read(ctx context.Context, step func(queue func(p redis.Pipeliner))) {
	step(func(p redis.Pipeliner) {
		o.owned = p.SIsMember(ctx, o.keys.Inventory(o.seller), o.item)
		o.rec.read(ctx, p)
	})
}

func (o *listOp) check() error {
	if err := o.rec.check(); err != nil {
		return err
	}
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
	k := o.keys
	p.ZAdd(ctx, k.Market(), redis.Z{Score: float64(o.price), Member: Member(o.item, o.seller)})
	p.SRem(ctx, k.Inventory(o.seller), o.item)
	p.HIncrBy(ctx, k.Listed(), o.item, 1)
	o.rec.write(ctx, p)
}

// purchaseOp moves price from buyer to seller and item from the market to
// buyer's inventory.
type purchaseOp struct {
	keys                Keys
	buyer, seller, item string
	price               int64
	rec                 opRecord
	score               *redis.FloatCmd
	funds               *redis.StringCmd
	sellerFunds         *redis.StringCmd
}

// read is listing 4.6's two reads, ZSCORE then HGET of the buyer's funds;
// the seller's funds (for the credit bound) and the operation's record go
// with the second.
func (o *purchaseOp) read(ctx context.Context, step func(queue func(p redis.Pipeliner))) {
	step(func(p redis.Pipeliner) {
		o.score = p.ZScore(ctx, o.keys.Market(), Member(o.item, o.seller))
	})
	step(func(p redis.Pipeliner) {
		o.funds = p.HGet(ctx, o.keys.User(o.buyer), "funds")
		o.sellerFunds = p.HGet(ctx, o.keys.User(o.seller), "funds")
		o.rec.read(ctx, p)
	})
}

func (o *purchaseOp) check() error {
	if err := o.rec.check(); err != nil {
		return err
	}
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
		return fmt.Errorf("buyer %s funds %q: %w", o.buyer, f, ErrCorrupt)
	}
	if have < o.price {
		return fmt.Errorf("%s has %d, needs %d: %w", o.buyer, have, o.price, ErrInsufficientFunds)
	}
	// Redis does not roll back a MULTI/EXEC whose command fails, so what
	// EXEC could refuse is checked here: the seller's HINCRBY must not
	// overflow (the API's bounds make that impossible; state changed out of
	// band may not).
	sf, err := o.sellerFunds.Result()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("seller %s: %w", o.seller, ErrUserNotFound)
	}
	if err != nil {
		return err
	}
	sellerHas, err := strconv.ParseInt(sf, 10, 64)
	if err != nil {
		return fmt.Errorf("seller %s funds %q: %w", o.seller, sf, ErrCorrupt)
	}
	if sellerHas > math.MaxInt64-o.price {
		return fmt.Errorf("seller %s has %d, cannot be credited %d: %w", o.seller, sellerHas, o.price, ErrCorrupt)
	}
	return nil
}

func (o *purchaseOp) write(ctx context.Context, p redis.Pipeliner) {
	k := o.keys
	p.HIncrBy(ctx, k.User(o.seller), "funds", o.price)
	p.HIncrBy(ctx, k.User(o.buyer), "funds", -o.price)
	p.SAdd(ctx, k.Inventory(o.buyer), o.item)
	p.ZRem(ctx, k.Market(), Member(o.item, o.seller))
	p.XAdd(ctx, &redis.XAddArgs{Stream: k.Sales(), Values: receiptFields(o.buyer, o.seller, o.item, o.price, o.rec.id)})
	o.rec.write(ctx, p)
}

// receiptFields is a sale receipt as stored in Keys.Sales.
func receiptFields(buyer, seller, item string, price int64, op string) []any {
	return []any{"buyer", buyer, "seller", seller, "item", item, "price", price, "op", op}
}

// execErr is the error of a MULTI/EXEC. When Redis discarded the
// transaction (EXECABORT) because it refused a queued command (OOM over
// maxmemory, for instance), nothing was applied, and the refusal, which
// says why, comes first in the error returned.
func execErr(cmds []redis.Cmder, err error) error {
	if !redis.IsExecAbortError(err) {
		return err
	}
	for _, c := range cmds {
		if cerr := c.Err(); cerr != nil && !redis.IsExecAbortError(cerr) {
			return fmt.Errorf("%w: %w", cerr, err)
		}
	}
	return err
}

// pipelinedErr keeps the first error of a pipeline that is not redis.Nil
// (a missing listing or user is a reply the check reads, not a failure).
func pipelinedErr(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
