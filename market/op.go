package market

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// An op is the reads, checks and writes of one List or Purchase, the part
// every strategy but Lua shares: read in one pipeline (after a WATCH, or
// under a lock), check what was read, then queue the writes inside
// MULTI/EXEC. The Lua scripts (lua.go) do the same steps on the server.
type op interface {
	read(ctx context.Context, p redis.Pipeliner)
	check() error
	write(ctx context.Context, p redis.Pipeliner)
}

// listOp moves item from seller's inventory to the market at price.
type listOp struct {
	keys         Keys
	seller, item string
	price        int64
	owned        *redis.BoolCmd
}

func (o *listOp) read(ctx context.Context, p redis.Pipeliner) {
	o.owned = p.SIsMember(ctx, o.keys.Inventory(o.seller), o.item)
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
	k := o.keys
	p.ZAdd(ctx, k.Market(), redis.Z{Score: float64(o.price), Member: Member(o.item, o.seller)})
	p.SRem(ctx, k.Inventory(o.seller), o.item)
}

// purchaseOp moves price from buyer to seller and item from the market to
// buyer's inventory.
type purchaseOp struct {
	keys                Keys
	buyer, seller, item string
	price               int64
	score               *redis.FloatCmd
	funds               *redis.StringCmd
}

func (o *purchaseOp) read(ctx context.Context, p redis.Pipeliner) {
	o.score = p.ZScore(ctx, o.keys.Market(), Member(o.item, o.seller))
	o.funds = p.HGet(ctx, o.keys.User(o.buyer), "funds")
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
	k := o.keys
	p.HIncrBy(ctx, k.User(o.seller), "funds", o.price)
	p.HIncrBy(ctx, k.User(o.buyer), "funds", -o.price)
	p.SAdd(ctx, k.Inventory(o.buyer), o.item)
	p.ZRem(ctx, k.Market(), Member(o.item, o.seller))
}

// pipelinedErr keeps the first error of a pipeline that is not redis.Nil
// (a missing listing or user is a reply the check reads, not a failure).
func pipelinedErr(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
