package market

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// MaxBulkListings bounds the listings one CreateListings call creates: one
// script call runs them all, and Redis serves nothing else meanwhile.
const MaxBulkListings = 10_000

var createListingsScript = redis.NewScript(`
-- KEYS: seller hash, items set, market zset, listed counts
-- ARGV: item, member, price triples
if redis.call('exists', KEYS[1]) == 0 then return 'user_not_found' end
for i = 1, #ARGV, 3 do
  if redis.call('sismember', KEYS[2], ARGV[i]) == 1 then return 'already_exists' end
end
for i = 1, #ARGV, 3 do
  redis.call('sadd', KEYS[2], ARGV[i])
  redis.call('zadd', KEYS[3], ARGV[i + 2], ARGV[i + 1])
  redis.call('hincrby', KEYS[4], ARGV[i], 1)
end
return 'ok'`)

// CreateListings is a bulk set-up helper: it creates each of items (IDs
// new to the market) for seller and lists it at once at prices[i], in one
// script call, so that a market can be filled with many listings quickly.
// The result is what GrantItem followed by List would leave: the items are
// registered as created and the listings recorded in the ledger, so the
// audit holds. Either every listing is created or none is (ErrAlreadyExists
// if an item exists, ErrUserNotFound if the seller does not). At most
// MaxBulkListings items per call.
func (m *Market) CreateListings(ctx context.Context, seller string, items []string, prices []int64) error {
	if err := ValidID("user", seller); err != nil {
		return err
	}
	if len(items) != len(prices) {
		return fmt.Errorf("%w: %d items but %d prices", ErrInvalid, len(items), len(prices))
	}
	if len(items) > MaxBulkListings {
		return fmt.Errorf("%w: %d listings in one call, at most %d", ErrInvalid, len(items), MaxBulkListings)
	}
	if len(items) == 0 {
		return nil
	}
	args := make([]any, 0, 3*len(items))
	seen := make(map[string]bool, len(items))
	for i, item := range items {
		if err := ValidID("item", item); err != nil {
			return err
		}
		if err := ValidPrice(prices[i]); err != nil {
			return err
		}
		if seen[item] {
			return fmt.Errorf("%w: item %s appears twice", ErrInvalid, item)
		}
		seen[item] = true
		args = append(args, item, member(item, seller), prices[i])
	}
	k := m.keys
	res, err := createListingsScript.Run(ctx, m.rdb, []string{k.User(seller), k.Items(), k.Market(), k.Listed()}, args...).Text()
	if err != nil {
		return err
	}
	if err := scriptResult(res); err != nil {
		return fmt.Errorf("%w: listings of %s", err, seller)
	}
	for i, item := range items {
		m.ledger.itemCreated(item)
		m.ledger.listed("", item, prices[i])
	}
	return nil
}
