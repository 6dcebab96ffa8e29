package market

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The Lua strategy (book 11.3.2): each operation is one script, so it
// reads, checks and writes with nothing in between, in one round trip.
// The scripts do what op.go's listOp and purchaseOp do. (The book's
// repository swaps ZADD's score and member in its list script; this one
// does not.)
//
// A failed command does not undo the ones before it, so each script checks
// first that every key it writes holds the type the market writes there (or
// nothing) and that no write can meet a limit (luaChecks; op.go's keyTypes
// does the same for the other strategies).
var (
	listScript = redis.NewScript(luaChecks + `
-- KEYS: seller inventory, market, listed counts, operation record
-- ARGV: item, member, price, operation record ("" for none), record ttl ms
if ARGV[4] ~= '' then
  local seen = redis.call('get', KEYS[4])
  if seen then return 'op:' .. seen end
end
if other_type(KEYS[1], 'set') or other_type(KEYS[2], 'zset') or other_type(KEYS[3], 'hash') then return 'corrupt' end
local count = redis.call('hget', KEYS[3], ARGV[1])
if count and (not string.match(count, '^%-?%d+$') or tonumber(count) + 1 > 9223372036854771712) then return 'corrupt' end
if redis.call('sismember', KEYS[1], ARGV[1]) == 0 then return 'item_not_owned' end
redis.call('zadd', KEYS[2], ARGV[3], ARGV[2])
redis.call('srem', KEYS[1], ARGV[1])
redis.call('hincrby', KEYS[3], ARGV[1], 1)
if ARGV[4] ~= '' then redis.call('set', KEYS[4], ARGV[4], 'PX', ARGV[5]) end
return 'ok'`)

	purchaseScript = redis.NewScript(luaChecks + `
-- KEYS: market, buyer hash, seller hash, buyer inventory, sales stream,
--       operation record
-- ARGV: member, item, price, buyer, seller, operation ID ("" for none),
--       operation record, record ttl ms
if ARGV[6] ~= '' then
  local seen = redis.call('get', KEYS[6])
  if seen then return 'op:' .. seen end
end
if other_type(KEYS[1], 'zset') or other_type(KEYS[2], 'hash') or other_type(KEYS[3], 'hash')
  or other_type(KEYS[4], 'set') or other_type(KEYS[5], 'stream') or stream_full(KEYS[5]) then
  return 'corrupt'
end
local listed = redis.call('zscore', KEYS[1], ARGV[1])
if not listed then return 'listing_not_found' end
local price = tonumber(ARGV[3])
if tonumber(listed) ~= price then return 'price_changed' end
local funds = redis.call('hget', KEYS[2], 'funds')
if not funds then return 'user_not_found' end
if not tonumber(funds) then return 'corrupt' end
if tonumber(funds) < price then return 'insufficient_funds' end
-- A failed command does not undo the ones before it: check what HINCRBY
-- could refuse first (funds that are not integers, or a credit that would
-- overflow, with a margin for the rounding of doubles near 2^63).
local sfunds = redis.call('hget', KEYS[3], 'funds')
if not sfunds then return 'user_not_found' end
if not string.match(sfunds, '^%-?%d+$') or not string.match(funds, '^%-?%d+$') then return 'corrupt' end
if tonumber(sfunds) + price > 9223372036854771712 then return 'corrupt' end -- 2^63 - 4096
redis.call('hincrby', KEYS[3], 'funds', ARGV[3])
redis.call('hincrby', KEYS[2], 'funds', '-' .. ARGV[3])
redis.call('sadd', KEYS[4], ARGV[2])
redis.call('zrem', KEYS[1], ARGV[1])
redis.call('xadd', KEYS[5], '*', 'buyer', ARGV[4], 'seller', ARGV[5], 'item', ARGV[2], 'price', ARGV[3], 'op', ARGV[6])
if ARGV[6] ~= '' then redis.call('set', KEYS[6], ARGV[7], 'PX', ARGV[8]) end
return 'ok'`)
)

// luaChecks are the functions the scripts check their keys with:
// other_type tells a key that holds another type than want (a missing key
// does not), stream_full a stream that has generated the last stream ID,
// after which every XADD fails.
const luaChecks = `
local function other_type(key, want)
  local t = redis.call('type', key)
  t = t.ok or t
  return t ~= want and t ~= 'none'
end
local function stream_full(key)
  if redis.call('exists', key) == 0 then return false end
  local info = redis.call('xinfo', 'stream', key)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then return info[i + 1] == '` + lastStreamID + `' end
  end
  return false
end
`

func (m *Market) listLua(ctx context.Context, o *listOp) error {
	beforeCommit(ctx, Lua, "list")
	k := m.keys
	res, err := listScript.Run(ctx, m.rdb, []string{k.Inventory(o.seller), k.Market(), k.Listed(), k.Op(o.rec.id)},
		o.item, member(o.item, o.seller), o.price, o.rec.scriptValue(), o.rec.ttl.Milliseconds()).Text()
	if err != nil {
		return err
	}
	if seen, ok := strings.CutPrefix(res, "op:"); ok {
		return o.rec.compare(seen)
	}
	if err := scriptResult(res); err != nil {
		return fmt.Errorf("%w: %s by %s", err, o.item, o.seller)
	}
	return nil
}

func (m *Market) purchaseLua(ctx context.Context, o *purchaseOp) error {
	beforeCommit(ctx, Lua, "purchase")
	k := m.keys
	res, err := purchaseScript.Run(ctx, m.rdb,
		[]string{k.Market(), k.User(o.buyer), k.User(o.seller), k.Inventory(o.buyer), k.Sales(), k.Op(o.rec.id)},
		member(o.item, o.seller), o.item, o.price, o.buyer, o.seller, o.rec.id, o.rec.scriptValue(), o.rec.ttl.Milliseconds()).Text()
	if err != nil {
		return err
	}
	if seen, ok := strings.CutPrefix(res, "op:"); ok {
		return o.rec.compare(seen)
	}
	if err := scriptResult(res); err != nil {
		return fmt.Errorf("%w: %s from %s for %s", err, o.item, o.seller, o.buyer)
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
	case "corrupt":
		return ErrCorrupt
	}
	return fmt.Errorf("market: unexpected script result %q", res)
}
