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

	"github.com/lockmarket/lockmarket/market/internal/plug"
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
// round trip of its own (see markettrace.ClientForm). Reads the book does not have
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
	keys   plug.Keys
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
		return fmt.Errorf("%w: operation %s was %q, not %q", ErrOpMismatch, r.id, what, r.what)
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
	keys         plug.Keys
	seller, item string
	price        int64
	rec          opRecord
	owned        *redis.BoolCmd
	types        keyTypes
	count        *redis.StringCmd // the item's listed count
}

// read is listing 4.5's one read, SISMEMBER; the types of the keys the
// listing writes and the item's listed count travel with it.
func (o *listOp) read(ctx context.Context, step func(queue func(p redis.Pipeliner))) {
	k := o.keys
	step(func(p redis.Pipeliner) {
		o.owned = p.SIsMember(ctx, k.Inventory(o.seller), o.item)
		o.rec.read(ctx, p)
		o.types.read(ctx, p, typed{k.Inventory(o.seller), "set"}, typed{k.Market(), "zset"}, typed{k.Listed(), "hash"})
		o.count = p.HGet(ctx, k.Listed(), o.item)
	})
}

func (o *listOp) check() error {
	if err := o.rec.check(); err != nil {
		return err
	}
	if err := o.types.check(); err != nil {
		return err
	}
	// The listed count's HINCRBY must not fail after the other writes.
	switch n, err := o.count.Result(); {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return err
	default:
		if c, perr := strconv.ParseInt(n, 10, 64); perr != nil || c == math.MaxInt64 {
			return fmt.Errorf("%w: %s: listed count of %s is %q", ErrCorrupt, o.keys.Listed(), o.item, n)
		}
	}
	owned, err := o.owned.Result()
	if err != nil {
		return err
	}
	if !owned {
		return fmt.Errorf("%w: %s by %s", ErrItemNotOwned, o.item, o.seller)
	}
	return nil
}

func (o *listOp) write(ctx context.Context, p redis.Pipeliner) {
	k := o.keys
	p.ZAdd(ctx, k.Market(), redis.Z{Score: float64(o.price), Member: member(o.item, o.seller)})
	p.SRem(ctx, k.Inventory(o.seller), o.item)
	p.HIncrBy(ctx, k.Listed(), o.item, 1)
	o.rec.write(ctx, p)
}

// purchaseOp moves price from buyer to seller and item from the market to
// buyer's inventory.
type purchaseOp struct {
	keys                plug.Keys
	buyer, seller, item string
	price               int64
	rec                 opRecord
	score               *redis.FloatCmd
	funds               *redis.StringCmd
	sellerFunds         *redis.StringCmd
	types               keyTypes
	sales               *redis.XInfoStreamCmd
}

// read is listing 4.6's two reads, ZSCORE then HGET of the buyer's funds;
// the seller's funds (for the credit bound), the operation's record, the
// types of the keys the purchase writes and the sales stream's last ID go
// with the second.
func (o *purchaseOp) read(ctx context.Context, step func(queue func(p redis.Pipeliner))) {
	k := o.keys
	step(func(p redis.Pipeliner) {
		o.score = p.ZScore(ctx, k.Market(), member(o.item, o.seller))
	})
	step(func(p redis.Pipeliner) {
		o.funds = p.HGet(ctx, k.User(o.buyer), "funds")
		o.sellerFunds = p.HGet(ctx, k.User(o.seller), "funds")
		o.rec.read(ctx, p)
		o.types.read(ctx, p, typed{k.Market(), "zset"}, typed{k.User(o.buyer), "hash"},
			typed{k.User(o.seller), "hash"}, typed{k.Inventory(o.buyer), "set"}, typed{k.Sales(), "stream"})
		o.sales = p.XInfoStream(ctx, k.Sales())
	})
}

func (o *purchaseOp) check() error {
	if err := o.rec.check(); err != nil {
		return err
	}
	if err := o.types.check(); err != nil {
		return err
	}
	// The receipt's XADD must not fail after the other writes.
	if o.types.of(o.keys.Sales()) == "stream" {
		info, err := o.sales.Result()
		if err != nil {
			return err
		}
		if info.LastGeneratedID == lastStreamID {
			return fmt.Errorf("%w: %s has reached the last stream ID", ErrCorrupt, o.keys.Sales())
		}
	}
	listed, err := o.score.Result()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: %s from %s", ErrListingNotFound, o.item, o.seller)
	}
	if err != nil {
		return err
	}
	if int64(listed) != o.price {
		return fmt.Errorf("%w: %s from %s is listed at %d, not %d", ErrPriceChanged, o.item, o.seller, int64(listed), o.price)
	}
	f, err := o.funds.Result()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: buyer %s", ErrUserNotFound, o.buyer)
	}
	if err != nil {
		return err
	}
	have, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: buyer %s has funds %q", ErrCorrupt, o.buyer, f)
	}
	if have < o.price {
		return fmt.Errorf("%w: %s has %d, needs %d", ErrInsufficientFunds, o.buyer, have, o.price)
	}
	// Redis does not roll back a MULTI/EXEC whose command fails, so what
	// EXEC could refuse is checked here: the seller's HINCRBY must not
	// overflow (the API's bounds make that impossible; state changed out of
	// band may not).
	sf, err := o.sellerFunds.Result()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: seller %s", ErrUserNotFound, o.seller)
	}
	if err != nil {
		return err
	}
	sellerHas, err := strconv.ParseInt(sf, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: seller %s has funds %q", ErrCorrupt, o.seller, sf)
	}
	if sellerHas > math.MaxInt64-o.price {
		return fmt.Errorf("%w: seller %s has %d, cannot be credited %d", ErrCorrupt, o.seller, sellerHas, o.price)
	}
	return nil
}

func (o *purchaseOp) write(ctx context.Context, p redis.Pipeliner) {
	k := o.keys
	p.HIncrBy(ctx, k.User(o.seller), "funds", o.price)
	p.HIncrBy(ctx, k.User(o.buyer), "funds", -o.price)
	p.SAdd(ctx, k.Inventory(o.buyer), o.item)
	p.ZRem(ctx, k.Market(), member(o.item, o.seller))
	p.XAdd(ctx, &redis.XAddArgs{Stream: k.Sales(), Values: receiptFields(o.buyer, o.seller, o.item, o.price, o.rec.id)})
	o.rec.write(ctx, p)
}

// lastStreamID is the largest ID of a stream entry: once a stream has
// generated it, every XADD fails.
const lastStreamID = "18446744073709551615-18446744073709551615"

// typed is a key and the type the market stores there.
type typed struct{ key, want string }

// keyTypes checks, before an operation's first write, that each key it
// writes holds the type the market writes there, or nothing. Redis rolls
// back neither a MULTI/EXEC nor a script whose command fails: a key set to
// another type out of band would let the writes before the failing one
// apply. The Lua scripts check the same (see luaChecks).
type keyTypes struct {
	keys []typed
	cmds []*redis.StatusCmd
}

func (t *keyTypes) read(ctx context.Context, p redis.Pipeliner, keys ...typed) {
	t.keys, t.cmds = keys, make([]*redis.StatusCmd, len(keys))
	for i, k := range keys {
		t.cmds[i] = p.Type(ctx, k.key)
	}
}

// check returns an error wrapping ErrCorrupt for the first key of another
// type, or the error of a TYPE that failed.
func (t *keyTypes) check() error {
	for i, k := range t.keys {
		got, err := t.cmds[i].Result()
		if err != nil {
			return err
		}
		if got != k.want && got != "none" {
			return fmt.Errorf("%w: %s holds a %s, not a %s", ErrCorrupt, k.key, got, k.want)
		}
	}
	return nil
}

// of is the type read for key ("" if it was not read).
func (t *keyTypes) of(key string) string {
	for i, k := range t.keys {
		if k.key == key {
			return t.cmds[i].Val()
		}
	}
	return ""
}

// receiptFields is a sale receipt as stored in the stream of receipts
// (keys.Sales).
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

// pipelinedErr is the error of a pipeline of WATCH and reads: the first
// error that is neither redis.Nil nor an error reply to a read (a missing
// listing or user, a key of another type: replies the op's check reads and
// judges), so a failed WATCH or a lost connection.
func pipelinedErr(cmds []redis.Cmder, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return nil
	}
	for _, c := range cmds {
		cerr := c.Err()
		if cerr == nil || errors.Is(cerr, redis.Nil) {
			continue
		}
		var reply redis.Error
		if errors.As(cerr, &reply) && c.Name() != "watch" && c.Name() != "unwatch" {
			continue
		}
		return cerr
	}
	return nil
}
