package market

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/faultpoint"
)

// The Lua strategy (book 11.3.2): each operation is one script, so it
// reads, checks and writes with nothing in between, in one round trip.
// The scripts do what op.go's listOp and purchaseOp do. (The book's
// repository swaps ZADD's score and member in its list script; this one
// does not.)
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

func (m *Market) listLua(ctx context.Context, o *listOp) error {
	faultpoint.BeforeCommit(ctx, string(Lua), "list")
	k := m.keys
	res, err := listScript.Run(ctx, m.rdb, []string{k.Inventory(o.seller), k.Market()},
		o.item, Member(o.item, o.seller), o.price).Text()
	if err != nil {
		return err
	}
	if err := scriptResult(res); err != nil {
		return fmt.Errorf("%s by %s: %w", o.item, o.seller, err)
	}
	return nil
}

func (m *Market) purchaseLua(ctx context.Context, o *purchaseOp) error {
	faultpoint.BeforeCommit(ctx, string(Lua), "purchase")
	k := m.keys
	res, err := purchaseScript.Run(ctx, m.rdb,
		[]string{k.Market(), k.User(o.buyer), k.User(o.seller), k.Inventory(o.buyer)},
		Member(o.item, o.seller), o.item, o.price).Text()
	if err != nil {
		return err
	}
	if err := scriptResult(res); err != nil {
		return fmt.Errorf("%s from %s for %s: %w", o.item, o.seller, o.buyer, err)
	}
	return nil
}

// scriptResult maps the status words the scripts return to errors.
func scriptResult(res string) error {
	switch res {
	case "ok":
		return nil
	case "already_exists":
		return ErrAlreadyExists
	case "market_full":
		return ErrMarketFull
	case "user_not_found":
		return ErrUserNotFound
	case "listing_not_found":
		return ErrListingNotFound
	case "price_changed":
		return ErrPriceChanged
	case "insufficient_funds":
		return ErrInsufficientFunds
	case "item_not_owned":
		return ErrItemNotOwned
	}
	return fmt.Errorf("market: unexpected script result %q", res)
}
