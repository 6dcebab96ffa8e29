// Package market is the game marketplace of "Redis in Action" (sections
// 4.4, 6.2 and 11.3): users with funds and inventories, and a market of
// listings, whose List and Purchase operations run under a choice of
// concurrency-control strategies (see Strategy).
//
// All keys of one market share the hash tag {NAME}, so that transactions
// and scripts work on Redis Cluster and markets spread over its shards.
package market

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
)

// Bounds on amounts. Every user's funds are at most the market's total
// money, which is at most MaxMarketMoney, and MaxMarketMoney + MaxPrice is
// far below 2^53, so no HINCRBY can overflow and Lua compares amounts
// exactly.
const (
	MaxPrice       = 1_000_000_000_000     // 10^12 per listing
	MaxFunds       = 1_000_000_000_000     // 10^12 given to one user at creation
	MaxMarketMoney = 1_000_000_000_000_000 // 10^15 in one market
	MaxNameLen     = 64                    // characters in a user's display name
)

// Errors returned by the market. Wrapped errors carry detail; test with
// errors.Is.
var (
	ErrInvalid           = errors.New("invalid request")
	ErrUserNotFound      = errors.New("user not found")
	ErrListingNotFound   = errors.New("listing not found")
	ErrPriceChanged      = errors.New("price changed")
	ErrInsufficientFunds = errors.New("insufficient funds")
	ErrItemNotOwned      = errors.New("item not owned by seller")
	ErrAlreadyExists     = errors.New("already exists")
	ErrMarketFull        = errors.New("market money limit reached")
	// ErrContended means the operation gave up: its lock could not be taken,
	// or its transaction kept being aborted, until its time ran out.
	ErrContended = errors.New("gave up under contention")
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidID checks a user, item or market ID: 1 to 64 of A-Z a-z 0-9 _ -.
// A dot separates item and seller in a listing, so it is never allowed.
func ValidID(kind, id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%w: %s %q must be 1-64 characters of A-Z a-z 0-9 _ -", ErrInvalid, kind, clip(id))
	}
	return nil
}

// ValidPrice checks that a price is in 1..MaxPrice.
func ValidPrice(price int64) error {
	if price < 1 || price > MaxPrice {
		return fmt.Errorf("%w: price %d must be between 1 and %d", ErrInvalid, price, int64(MaxPrice))
	}
	return nil
}

// ValidFunds checks starting funds: 0..MaxFunds.
func ValidFunds(funds int64) error {
	if funds < 0 || funds > MaxFunds {
		return fmt.Errorf("%w: funds %d must be between 0 and %d", ErrInvalid, funds, int64(MaxFunds))
	}
	return nil
}

// ValidName checks a display name: 1 to 64 printable characters.
func ValidName(name string) error {
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxNameLen {
		return fmt.Errorf("%w: name must be 1-%d characters of valid UTF-8", ErrInvalid, MaxNameLen)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: name must not contain control characters", ErrInvalid)
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Keys names the Redis keys of one market (book layout, behind {NAME}).
type Keys struct{ name, prefix string }

// NewKeys returns the key names of market name.
func NewKeys(name string) Keys { return Keys{name: name, prefix: "{" + name + "}:"} }

// Market is the ZSET of listings: member ITEM.SELLER, score price.
func (k Keys) Market() string { return k.prefix + "market:" }

// User is the HASH of a user: name, funds.
func (k Keys) User(id string) string { return k.prefix + "users:" + id }

// Inventory is the SET of item IDs a user owns.
func (k Keys) Inventory(id string) string { return k.prefix + "inventory:" + id }

// MarketLock is the coarse lock over the whole market.
func (k Keys) MarketLock() string { return k.prefix + "lock:market:" }

// ItemLock is the fine-grained lock of one listing.
func (k Keys) ItemLock(item, seller string) string {
	return k.prefix + "lock:item:" + Member(item, seller)
}

// UserIDs is the SET of all user IDs (kept for the audit and the API).
func (k Keys) UserIDs() string { return k.prefix + "userids:" }

// Items is the SET of all item IDs ever created (kept for the audit).
func (k Keys) Items() string { return k.prefix + "items:" }

// Money is the total money put into the market (kept for the audit).
func (k Keys) Money() string { return k.prefix + "money:" }

// Prefix is the common prefix, "{NAME}:".
func (k Keys) Prefix() string { return k.prefix }

// Member is the listing member of item sold by seller: "ITEM.SELLER".
func Member(item, seller string) string { return item + "." + seller }

// SplitMember splits "ITEM.SELLER".
func SplitMember(member string) (item, seller string, ok bool) {
	return strings.Cut(member, ".")
}

// Market is one marketplace on Redis. It is safe for concurrent use.
type Market struct {
	rdb  redis.UniversalClient
	name string
	keys Keys

	lockTTL      time.Duration
	listTimeout  time.Duration
	buyTimeout   time.Duration
	backoff      locking.Backoff
	beforeCommit func(ctx context.Context, s Strategy, op string)
	ledger       *Ledger
	lockFunc     LockFunc
	fencing      bool
}

// Option configures a Market.
type Option func(*Market)

// WithLockTTL sets the lease of the coarse and fine locks (default 10 s).
func WithLockTTL(d time.Duration) Option { return func(m *Market) { m.lockTTL = d } }

// WithTimeouts bounds how long one List and one Purchase may wait for a
// lock or retry a transaction before failing with ErrContended (defaults
// 5 s and 10 s, as in the book).
func WithTimeouts(list, purchase time.Duration) Option {
	return func(m *Market) { m.listTimeout, m.buyTimeout = list, purchase }
}

// WithBackoff sets how the lock strategies wait between lock attempts.
func WithBackoff(b locking.Backoff) Option { return func(m *Market) { m.backoff = b } }

// WithBeforeCommit installs a hook called by every strategy just before it
// commits (for lock strategies: while the lock is held). op is "list" or
// "purchase". Fault-injection tests use it to pause a client there.
func WithBeforeCommit(f func(ctx context.Context, s Strategy, op string)) Option {
	return func(m *Market) { m.beforeCommit = f }
}

// WithLedger records every acknowledged operation into l, for the audit.
// By default a Market keeps a ledger of its own.
func WithLedger(l *Ledger) Option { return func(m *Market) { m.ledger = l } }

// New returns the market called name (an ID) on rdb.
func New(rdb redis.UniversalClient, name string, opts ...Option) (*Market, error) {
	if err := ValidID("market name", name); err != nil {
		return nil, err
	}
	m := &Market{
		rdb: rdb, name: name, keys: NewKeys(name),
		lockTTL: 10 * time.Second, listTimeout: 5 * time.Second, buyTimeout: 10 * time.Second,
		backoff: locking.DefaultBackoff,
	}
	for _, o := range opts {
		o(m)
	}
	if m.ledger == nil {
		m.ledger = NewLedger()
	}
	return m, nil
}

// Name is the market's name.
func (m *Market) Name() string { return m.name }

// Keys returns the market's key names.
func (m *Market) Keys() Keys { return m.keys }

// Client is the Redis client the market uses.
func (m *Market) Client() redis.UniversalClient { return m.rdb }

// Ledger is the record of acknowledged operations the audit checks.
func (m *Market) Ledger() *Ledger { return m.ledger }

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
redis.call('hset', KEYS[1], 'name', ARGV[2], 'funds', ARGV[3])
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
		return "", fmt.Errorf("user %s: %w", id, err)
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
		return fmt.Errorf("item %s for %s: %w", item, user, err)
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
		return User{}, fmt.Errorf("user %s: %w", id, ErrUserNotFound)
	}
	funds, _ := strconv.ParseInt(fields["funds"], 10, 64)
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
			zs = p.ZRangeWithScores(ctx, m.keys.Market(), offset, offset+limit-1)
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
			item, seller, _ := SplitMember(z.Member.(string))
			out = append(out, Listing{Item: item, Seller: seller, Price: int64(z.Score)})
		}
	}
	return out, total.Val(), nil
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
