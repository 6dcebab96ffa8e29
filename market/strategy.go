package market

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
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
	// Replayed is set when the operation's ID (see OpID) had been applied
	// before: nothing was applied now, and the operation counts as done.
	Replayed bool `json:"replayed,omitempty"`
	// LockLost is set when the lock's lease had expired by the time it was
	// released: the operation ran, for a while, without mutual exclusion.
	LockLost bool `json:"lock_lost,omitempty"`
}

// OpOption configures one List or Purchase (OpID).
type OpOption struct{ id string }

// OpID gives the operation an ID (1-64 of A-Z a-z 0-9 _ -) that makes it
// idempotent: the ID and the operation are recorded in Redis with its
// writes, atomically, for the market's WithOpTTL; a repeat with the same ID
// and the same arguments applies nothing and succeeds with Cost.Replayed;
// the same ID with other arguments fails with ErrOpMismatch. A client whose
// reply was lost (the outcome unknown) retries with the same ID to apply
// the operation exactly once.
func OpID(id string) OpOption { return OpOption{id: id} }

// newRecord is the idempotency record of one operation.
func (m *Market) newRecord(s Strategy, what string, opts []OpOption) (opRecord, error) {
	r := opRecord{keys: m.keys, ttl: m.opTTL, what: what, strat: s}
	for _, o := range opts {
		r.id = o.id
	}
	if r.id != "" {
		if err := ValidID("operation ID", r.id); err != nil {
			return r, err
		}
	}
	return r, nil
}

// finish turns the end of an operation into its result: a replay is a
// success that applied nothing now.
func finish(cost *Cost, err error) error {
	var r replayed
	if errors.As(err, &r) {
		cost.Replayed = true
		return nil
	}
	return err
}

// OutcomeOf says whether the List or Purchase that returned err was
// applied: the one classification of the market's errors, which the
// history checker, the fault runs and the HTTP service all use. Nil is
// locking.Applied. Every error of this package is locking.NotApplied: the
// market returns them only before its commit, or when the commit was
// refused whole. That includes ErrContended: the operation gave up waiting
// for its lock, or its time ran out between two attempts, never while a
// commit it sent was in flight (see contended), so nothing of it was
// applied and a retry cannot apply it twice. Any other error is classified
// by locking.OutcomeOf: a commit that was never sent or that Redis refused
// is locking.NotApplied, and one whose reply was lost locking.Unknown.
func OutcomeOf(err error) locking.Outcome {
	for _, e := range refusals {
		if errors.Is(err, e) {
			return locking.NotApplied
		}
	}
	return locking.OutcomeOf(err)
}

// refusals are the errors of this package: each means nothing was
// applied.
var refusals = []error{ErrInvalid, ErrUserNotFound, ErrListingNotFound, ErrPriceChanged,
	ErrInsufficientFunds, ErrItemNotOwned, ErrAlreadyExists, ErrMarketFull, ErrOpMismatch,
	ErrCorrupt, ErrContended}

// committed is the error of a commit (EXEC) that was sent, other than an
// abort by WATCH: contended keeps it apart from the end of the operation's
// time before anything was sent.
type committed struct{ err error }

func (c committed) Error() string { return c.err.Error() }
func (c committed) Unwrap() error { return c.err }

// sent marks err, the error of a commit, as committed (nil and an abort by
// WATCH stay as they are).
func sent(err error) error {
	if err == nil || errors.Is(err, redis.TxFailedErr) {
		return err
	}
	return committed{err}
}

// List moves item from seller's inventory to the market at price.
func (m *Market) List(ctx context.Context, s Strategy, seller, item string, price int64, opts ...OpOption) (cost Cost, err error) {
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
	if _, err := ParseStrategy(string(s)); err != nil {
		return cost, err
	}
	rec, err := m.newRecord(s, fmt.Sprintf("list %s %s %d", seller, item, price), opts)
	if err != nil {
		return cost, err
	}
	ctx, cancel := context.WithTimeout(ctx, m.listTimeout)
	defer cancel()
	o := &listOp{keys: m.keys, seller: seller, item: item, price: price, rec: rec}
	switch s {
	case Watch:
		err = m.runWatch(ctx, s, "list", o, &cost, rec.watch(m.keys.Inventory(seller))...)
	case Coarse, Fine:
		err = m.runLocked(ctx, s, "list", m.lockKey(s, item, seller), o, &cost, rec.watch()...)
	case Lua:
		err = m.listLua(ctx, o)
	}
	if err = finish(&cost, err); err == nil {
		m.ledger.listed(rec.id, item, price)
	}
	return cost, err
}

// Purchase buys seller's listing of item for buyer, if it is still listed
// at price and buyer can afford it: the price moves from buyer to seller and
// the item from the market to buyer's inventory, all or nothing.
func (m *Market) Purchase(ctx context.Context, s Strategy, buyer, seller, item string, price int64, opts ...OpOption) (cost Cost, err error) {
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
	if _, err := ParseStrategy(string(s)); err != nil {
		return cost, err
	}
	rec, err := m.newRecord(s, fmt.Sprintf("purchase %s %s %s %d", buyer, seller, item, price), opts)
	if err != nil {
		return cost, err
	}
	ctx, cancel := context.WithTimeout(ctx, m.buyTimeout)
	defer cancel()
	o := &purchaseOp{keys: m.keys, buyer: buyer, seller: seller, item: item, price: price, rec: rec}
	switch s {
	case Watch:
		// Book 4.4: WATCH the market and the buyer.
		err = m.runWatch(ctx, s, "purchase", o, &cost, rec.watch(m.keys.Market(), m.keys.User(buyer))...)
	case Coarse, Fine:
		// Under the lock only the buyer's funds can change behind our back
		// (the same buyer buying elsewhere), so only they are WATCHed. The
		// seller's funds are read too, but can only grow meanwhile, and
		// the credit bound leaves room for that (see purchaseOp.check).
		err = m.runLocked(ctx, s, "purchase", m.lockKey(s, item, seller), o, &cost, rec.watch(m.keys.User(buyer))...)
	case Lua:
		err = m.purchaseLua(ctx, o)
	}
	if err = finish(&cost, err); err == nil {
		m.ledger.sold(rec.id, buyer, seller, item, price)
	}
	return cost, err
}

// contended turns the end of an operation's time into ErrContended: the
// operation gave up waiting for its lock or between two attempts, so
// nothing of it was applied. The error of a commit that was sent is
// returned as it is (see committed): a client that honours context
// deadlines may end it with the operation's time after the commit reached
// Redis, and then the outcome is unknown, not contended.
func contended(ctx context.Context, retries int, err error) error {
	var c committed
	if errors.As(err, &c) {
		return c.err
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) &&
		!errors.Is(err, ErrContended) {
		return fmt.Errorf("%w: aborted %d times: %w", ErrContended, retries, err)
	}
	return err
}
