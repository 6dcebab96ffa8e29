// Package market is the game marketplace of "Redis in Action" (sections
// 4.4, 6.2 and 11.3): users with funds and inventories, and a market of
// listings, whose List and Purchase operations run under a choice of
// concurrency-control strategies (see Strategy).
//
// Each strategy has one implementation, in a file of its own: watch.go
// (WATCH/MULTI/EXEC), locked.go (Coarse and Fine, under a locking.Mutex,
// or the lock function a tool plugs in with markettrace.WithLockFunc) and
// lua.go (one script per operation). The reads, checks and writes they
// share are in op.go. Each runs in one of two client forms (form.go,
// markettrace.WithClient): lean, which pipelines, and book, which sends the
// book's listings one command per round trip. Audit (audit.go) checks the
// invariants the strategies must keep.
//
// All keys of one market share the hash tag {NAME}, so that transactions
// and scripts work on Redis Cluster and markets spread over its shards
// (Keys: their prefix and pattern). The layout of the keys is written in
// one place, which package market/markettrace gives the tools that read
// the state directly (markettrace.Keys).
package market

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market/internal/plug"
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

// Errors returned by the market. Wrapped errors carry detail after the
// sentinel's text; test with errors.Is. Every error this package makes
// reads "market: ..."; an error of Redis or of its client is returned as
// it is (OutcomeOf classifies both).
var (
	ErrInvalid           = errors.New("market: invalid request")
	ErrUserNotFound      = errors.New("market: user not found")
	ErrListingNotFound   = errors.New("market: listing not found")
	ErrPriceChanged      = errors.New("market: price changed")
	ErrInsufficientFunds = errors.New("market: insufficient funds")
	ErrItemNotOwned      = errors.New("market: item not owned by seller")
	ErrAlreadyExists     = errors.New("market: already exists")
	ErrMarketFull        = errors.New("market: market money limit reached")
	// ErrOpMismatch means an operation ID (see OpID) was used before for
	// a different operation: nothing was applied.
	ErrOpMismatch = errors.New("market: operation ID used for another operation")
	// ErrCorrupt means the state in Redis is not what the market writes
	// (changed out of band, e.g. funds that are not a number or that a
	// credit would overflow): the operation refused to write anything.
	ErrCorrupt = errors.New("market: state changed out of band")
	// ErrContended means the operation gave up: its lock could not be taken,
	// or its transaction kept being aborted, until its time ran out.
	ErrContended = errors.New("market: gave up under contention")
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

// Market is one marketplace on Redis. It is safe for concurrent use.
type Market struct {
	rdb  redis.UniversalClient
	name string
	keys plug.Keys

	lockTTL     time.Duration
	listTimeout time.Duration
	buyTimeout  time.Duration
	backoff     locking.Backoff
	backoffSet  bool
	ledger      *Ledger
	fencing     bool
	opTTL       time.Duration
	plug        plug.Settings
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
// It applies only to the default locking.Mutex: New refuses it beside
// markettrace.WithLockFunc, whose lock waits as it will.
func WithBackoff(b locking.Backoff) Option {
	return func(m *Market) { m.backoff, m.backoffSet = b, true }
}

// WithLedger records every operation the Market acknowledges into l, so
// that Audit can check that each sale was paid exactly once at its listed
// price. A ledger grows with every item and sale for as long as it lives:
// give one to a bounded run (a test, a simulation), not to a long-running
// service. Without one, Audit checks what the state alone can show.
func WithLedger(l *Ledger) Option { return func(m *Market) { m.ledger = l } }

// WithOpTTL sets how long the record of an operation with an ID (see
// OpID) is kept, so that a repeat within that time is recognised
// (default 24 h).
func WithOpTTL(d time.Duration) Option { return func(m *Market) { m.opTTL = d } }

// New returns the market called name (an ID) on rdb.
func New(rdb redis.UniversalClient, name string, opts ...Option) (*Market, error) {
	if err := ValidID("market name", name); err != nil {
		return nil, err
	}
	m := &Market{
		rdb: rdb, name: name, keys: plug.NewKeys(name),
		lockTTL: 10 * time.Second, listTimeout: 5 * time.Second, buyTimeout: 10 * time.Second,
		backoff: locking.DefaultBackoff, opTTL: 24 * time.Hour, plug: plug.Settings{Form: plug.Lean, Redis: rdb},
	}
	for _, o := range opts {
		o(m)
	}
	if m.opTTL < time.Millisecond {
		return nil, fmt.Errorf("%w: operation record TTL %v is below 1ms", ErrInvalid, m.opTTL)
	}
	if m.lockTTL < time.Millisecond {
		return nil, fmt.Errorf("%w: lock TTL %v is below 1ms", ErrInvalid, m.lockTTL)
	}
	if m.listTimeout < time.Millisecond || m.buyTimeout < time.Millisecond {
		return nil, fmt.Errorf("%w: timeouts %v and %v must be at least 1ms", ErrInvalid, m.listTimeout, m.buyTimeout)
	}
	if m.backoffSet && m.plug.Lock != nil {
		return nil, fmt.Errorf("%w: WithBackoff applies to the default mutex, not to a LockFunc", ErrInvalid)
	}
	if m.plug.Form != plug.Lean && m.plug.Form != plug.Book {
		return nil, fmt.Errorf("%w: unknown client form %q (want lean or book)", ErrInvalid, m.plug.Form)
	}
	return m, nil
}

// Name is the market's name.
func (m *Market) Name() string { return m.name }

// Keys returns the market's key names.
func (m *Market) Keys() Keys { return Keys{m.keys} }

// Ping reports whether the market's Redis answers: nil if it does.
func (m *Market) Ping(ctx context.Context) error {
	if err := m.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("market: ping: %w", err)
	}
	return nil
}

// The tools' options (package markettrace) reach a market's plug-in
// points through plug.Of.
func init() { plug.Of = func(m any) *plug.Settings { return &m.(*Market).plug } }

// Ledger is the record of acknowledged operations the audit checks, or nil
// when the Market was made without WithLedger.
func (m *Market) Ledger() *Ledger { return m.ledger }

// Delete removes every key of the market (SCAN for Keys.Pattern, then
// UNLINK); on a cluster it scans every master. Run it when no operation is
// in flight.
func (m *Market) Delete(ctx context.Context) error {
	pattern := m.keys.Pattern()
	if cc, ok := m.rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return deleteMatching(ctx, node, pattern)
		})
	}
	return deleteMatching(ctx, m.rdb, pattern)
}

func deleteMatching(ctx context.Context, c redis.Cmdable, pattern string) error {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return fmt.Errorf("market: scan %s: %w", pattern, err)
		}
		if len(keys) > 0 {
			if err := c.Unlink(ctx, keys...).Err(); err != nil {
				return fmt.Errorf("market: unlink: %w", err)
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
