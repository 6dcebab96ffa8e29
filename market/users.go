package market

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/market/internal/plug"
)

// User is a user with its funds and inventory.
type User struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Funds     int64    `json:"funds"`
	Inventory []string `json:"inventory"`
}

// Listing is one item for sale.
type Listing struct {
	Item   string `json:"item"`
	Seller string `json:"seller"`
	Price  int64  `json:"price"`
}

var createUserScript = redis.NewScript(`
-- KEYS: user hash, user id set, money counter; ARGV: id, name, funds, max money
if redis.call('exists', KEYS[1]) == 1 then return 'already_exists' end
local total = tonumber(redis.call('get', KEYS[3]) or '0')
if total + tonumber(ARGV[3]) > tonumber(ARGV[4]) then return 'market_full' end
redis.call('hset', KEYS[1], 'name', ARGV[2], 'funds', ARGV[3], 'initial', ARGV[3])
redis.call('sadd', KEYS[2], ARGV[1])
redis.call('incrby', KEYS[3], ARGV[3])
return 'ok'`)

// CreateUser creates user id with a display name and starting funds. An
// empty id gets a random one. It returns the id, or ErrAlreadyExists.
func (m *Market) CreateUser(ctx context.Context, id, name string, funds int64) (string, error) {
	if id == "" {
		id = uuid.NewString()
	}
	if err := ValidID("user", id); err != nil {
		return "", err
	}
	if err := ValidName(name); err != nil {
		return "", err
	}
	if err := ValidFunds(funds); err != nil {
		return "", err
	}
	k := m.keys
	res, err := createUserScript.Run(ctx, m.rdb, []string{k.User(id), k.UserIDs(), k.Money()},
		id, name, funds, int64(MaxMarketMoney)).Text()
	if err != nil {
		return "", err
	}
	if err := scriptResult(res); err != nil {
		return "", fmt.Errorf("%w: user %s", err, id)
	}
	m.ledger.userCreated(id, funds)
	return id, nil
}

var grantItemScript = redis.NewScript(`
-- KEYS: user hash, items set, inventory; ARGV: item
if redis.call('exists', KEYS[1]) == 0 then return 'user_not_found' end
if redis.call('sadd', KEYS[2], ARGV[1]) == 0 then return 'already_exists' end
redis.call('sadd', KEYS[3], ARGV[1])
return 'ok'`)

// GrantItem creates item (an ID unique in the market) in user's inventory.
func (m *Market) GrantItem(ctx context.Context, user, item string) error {
	if err := ValidID("user", user); err != nil {
		return err
	}
	if err := ValidID("item", item); err != nil {
		return err
	}
	k := m.keys
	res, err := grantItemScript.Run(ctx, m.rdb, []string{k.User(user), k.Items(), k.Inventory(user)}, item).Text()
	if err != nil {
		return err
	}
	if err := scriptResult(res); err != nil {
		return fmt.Errorf("%w: item %s for %s", err, item, user)
	}
	m.ledger.itemCreated(item)
	return nil
}

// GetUser returns a user with funds and inventory (sorted), or
// ErrUserNotFound.
func (m *Market) GetUser(ctx context.Context, id string) (User, error) {
	if err := ValidID("user", id); err != nil {
		return User{}, err
	}
	var h *redis.MapStringStringCmd
	var inv *redis.StringSliceCmd
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		h = p.HGetAll(ctx, m.keys.User(id))
		inv = p.SMembers(ctx, m.keys.Inventory(id))
		return nil
	})
	if err != nil {
		return User{}, err
	}
	fields := h.Val()
	if len(fields) == 0 {
		return User{}, fmt.Errorf("%w: user %s", ErrUserNotFound, id)
	}
	funds, err := strconv.ParseInt(fields["funds"], 10, 64)
	if err != nil {
		return User{}, fmt.Errorf("%w: user %s has funds %q", ErrCorrupt, id, fields["funds"])
	}
	items := inv.Val()
	slices.Sort(items)
	return User{ID: id, Name: fields["name"], Funds: funds, Inventory: items}, nil
}

// UserIDs returns all user IDs, sorted.
func (m *Market) UserIDs(ctx context.Context) ([]string, error) {
	ids, err := m.rdb.SMembers(ctx, m.keys.UserIDs()).Result()
	slices.Sort(ids)
	return ids, err
}

// Listings returns up to limit listings, cheapest first, starting at
// offset, and the total number of listings.
func (m *Market) Listings(ctx context.Context, offset, limit int64) ([]Listing, int64, error) {
	if offset < 0 || limit < 0 {
		return nil, 0, fmt.Errorf("%w: offset and limit must not be negative", ErrInvalid)
	}
	var zs *redis.ZSliceCmd
	var total *redis.IntCmd
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if limit > 0 {
			stop := int64(-1) // to the end, when offset+limit would overflow
			if limit <= math.MaxInt64-offset {
				stop = offset + limit - 1
			}
			zs = p.ZRangeWithScores(ctx, m.keys.Market(), offset, stop)
		}
		total = p.ZCard(ctx, m.keys.Market())
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	out := []Listing{}
	if zs != nil {
		for _, z := range zs.Val() {
			item, seller, _ := plug.SplitMember(z.Member.(string))
			out = append(out, Listing{Item: item, Seller: seller, Price: int64(z.Score)})
		}
	}
	return out, total.Val(), nil
}
