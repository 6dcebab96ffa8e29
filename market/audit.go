package market

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/watchtx"

	"github.com/lockmarket/lockmarket/market/internal/plug"
)

// Violations counts broken invariants by kind. A correct strategy shows
// zero of each.
type Violations struct {
	// MoneyNotConserved is 1 when the sum of all funds differs from the
	// money put into the market.
	MoneyNotConserved int `json:"money_not_conserved"`
	// NegativeFunds counts users whose funds are below zero.
	NegativeFunds int `json:"negative_funds"`
	// ItemMisplaced counts items that are in no place or in more than one
	// (the market and inventories), or in a place without being created.
	ItemMisplaced int `json:"item_misplaced"`
	// NotPaidOnce counts sales that were not paid exactly once at the
	// listed price: items sold more often than listed, sales at another
	// price, and users whose funds do not match their acknowledged sales
	// and purchases.
	NotPaidOnce int `json:"not_paid_once"`
}

// Total is the sum of all kinds.
func (v Violations) Total() int {
	return v.MoneyNotConserved + v.NegativeFunds + v.ItemMisplaced + v.NotPaidOnce
}

// Add adds o to v.
func (v *Violations) Add(o Violations) {
	v.MoneyNotConserved += o.MoneyNotConserved
	v.NegativeFunds += o.NegativeFunds
	v.ItemMisplaced += o.ItemMisplaced
	v.NotPaidOnce += o.NotPaidOnce
}

// Report is the outcome of an audit.
type Report struct {
	Violations
	// Details describes the first violations found (at most 20).
	Details []string `json:"details,omitempty"`
	// LedgerChecked is true when the Market keeps a Ledger and the sales
	// it acknowledged were checked against the state too (see Audit).
	LedgerChecked bool `json:"ledger_checked"`
	// Users, Items and Listings are what the audit looked at.
	Users, Items, Listings int `json:"-"`
}

func (r *Report) note(format string, args ...any) {
	if len(r.Details) < 20 {
		r.Details = append(r.Details, fmt.Sprintf(format, args...))
	}
}

// Audit checks the market's invariants on one consistent snapshot of its
// state, so it may run while operations are in flight:
//  1. the sum of all funds equals the money put in;
//  2. no user's funds are negative;
//  3. every created item is in exactly one place (one listing or one
//     inventory);
//  4. every sale was paid exactly once: each user's funds equal their
//     starting funds plus their sales minus their purchases, as the
//     receipts record them, and no item was sold more times than it was
//     listed (markettrace.Keys has the keys of both). With a Ledger
//     (WithLedger), the sales this Market acknowledged are checked too:
//     each at the price it was listed at, and none missing
//     (Report.LedgerChecked).
//
// The snapshot is one MULTI/EXEC of reads (Redis serves nothing else while
// it runs: its cost grows with the number of users, items and listings)
// plus the receipts up to the snapshot's last one, read afterwards in
// chunks (receipts are only ever appended). Sums are checked for overflow.
func (m *Market) Audit(ctx context.Context) (Report, error) {
	var rep Report
	snap, err := m.snapshot(ctx)
	if err != nil {
		return rep, err
	}
	rep.Users, rep.Items, rep.Listings = len(snap.ids), len(snap.created), len(snap.listings)
	rep.checkState(snap)

	// 4: from the receipts, then from the ledger; a user or an item that
	// both find wrong counts once.
	net, sold, err := m.receipts(ctx, snap.lastSale)
	if err != nil {
		return rep, err
	}
	badUsers := rep.checkReceipts(snap, net)
	overSold := rep.checkSold(snap, sold)
	if l := m.ledger; l != nil {
		rep.LedgerChecked = true
		l.check(snap, &rep, badUsers, overSold)
	}
	rep.NotPaidOnce += len(badUsers)
	for _, n := range overSold {
		rep.NotPaidOnce += n
	}
	return rep, nil
}

// checkState checks invariants 1 to 3 on the state alone: the money, each
// user's funds, and the place of every item.
func (rep *Report) checkState(snap snapshot) {
	places := newPlaces(snap.created, rep)
	for _, member := range snap.listings {
		item, _, _ := plug.SplitMember(member)
		places.put(item, "the market")
	}
	var sum int64
	sumOK := true
	for _, u := range snap.users {
		if !u.fundsOK {
			rep.note("user %s has unreadable funds %q", u.id, u.rawFunds)
		}
		var ok bool
		if sum, ok = addInt64(sum, u.funds); !ok {
			sumOK = false
		}
		if u.funds < 0 {
			rep.NegativeFunds++
			rep.note("user %s has negative funds %d", u.id, u.funds)
		}
		for _, item := range u.inventory {
			places.put(item, "inventory of "+u.id)
		}
	}
	if !sumOK || sum != snap.money {
		rep.MoneyNotConserved = 1
		if sumOK {
			rep.note("funds add up to %d, but %d was put in", sum, snap.money)
		} else {
			rep.note("funds add up to more than an int64 holds, but %d was put in", snap.money)
		}
	}
	places.check(snap.created)
}

// places counts where each created item was found (invariant 3).
type places struct {
	n   map[string]int
	rep *Report
}

func newPlaces(created []string, rep *Report) places {
	p := places{n: make(map[string]int, len(created)), rep: rep}
	for _, it := range created {
		p.n[it] = 0
	}
	return p
}

// put counts item in where; an item never created is misplaced at once.
func (p places) put(item, where string) {
	n, ok := p.n[item]
	if !ok {
		p.rep.ItemMisplaced++
		p.rep.note("item %s in %s was never created", item, where)
		p.n[item] = 1
		return
	}
	p.n[item] = n + 1
}

// check counts each created item found in no place or in more than one.
func (p places) check(created []string) {
	for _, it := range created {
		if n := p.n[it]; n != 1 {
			p.rep.ItemMisplaced++
			p.rep.note("item %s is in %d places", it, n)
		}
	}
}

// checkReceipts returns the users whose funds are not their starting
// funds plus the net of their receipts.
func (rep *Report) checkReceipts(snap snapshot, net map[string]total) map[string]bool {
	badUsers := map[string]bool{}
	for _, u := range snap.users {
		if !u.initialOK {
			continue // made before receipts were kept
		}
		n, seen := net[u.id]
		if !seen {
			n = total{ok: true}
		}
		want, ok := addInt64(u.initial, n.v)
		if !ok || !n.ok {
			badUsers[u.id] = true
			rep.note("user %s: sales and purchases overflow", u.id)
			continue
		}
		if u.funds != want {
			badUsers[u.id] = true
			rep.note("user %s has %d, but started with %d and the receipts add %d", u.id, u.funds, u.initial, n.v)
		}
	}
	return badUsers
}

// checkSold returns, for each item sold more times than it was listed,
// by how many.
func (rep *Report) checkSold(snap snapshot, sold map[string]int) map[string]int {
	overSold := map[string]int{}
	for item, n := range sold {
		if listed := snap.listed[item]; n > listed {
			overSold[item] = n - listed
			rep.note("item %s sold %d times but listed %d", item, n, listed)
		}
	}
	return overSold
}

// check adds what the ledger's acknowledged operations show to the users
// and items already found wrong.
func (l *Ledger) check(snap snapshot, rep *Report, badUsers map[string]bool, overSold map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	funds := make(map[string]int64, len(snap.users))
	for _, u := range snap.users {
		funds[u.id] = u.funds
	}
	for id, init := range l.initial {
		f, ok := funds[id]
		if !ok {
			continue
		}
		if want := init + l.net[id]; f != want && !badUsers[id] {
			badUsers[id] = true
			rep.note("user %s has %d, acknowledged operations leave %d", id, f, want)
		}
	}
	for item, r := range l.items {
		over := len(r.sold) - len(r.listed)
		if over <= 0 {
			over = pricesNotListed(r.sold, r.listed)
			if over > 0 {
				rep.note("item %s sold %d times at a price it was not listed at", item, over)
			}
		} else {
			rep.note("item %s sold %d times but listed %d (acknowledged)", item, len(r.sold), len(r.listed))
		}
		if over > overSold[item] {
			overSold[item] = over
		}
	}
}

// addInt64 returns a+b and whether it did not overflow.
func addInt64(a, b int64) (int64, bool) {
	c := a + b
	if (b > 0 && c < a) || (b < 0 && c > a) {
		return 0, false
	}
	return c, true
}

// snapshot is the state the audit checks, read at one instant.
type snapshot struct {
	ids, created, listings []string
	money                  int64
	listed                 map[string]int // item -> times listed
	lastSale               string         // ID of the last receipt, "" if none
	users                  []userState
}

type userState struct {
	id                 string
	funds, initial     int64
	fundsOK, initialOK bool
	rawFunds           string
	inventory          []string
}

// snapshot reads the market's state in one MULTI/EXEC; it WATCHes the set
// of users, so a user created in between makes it read again.
func (m *Market) snapshot(ctx context.Context) (snapshot, error) {
	k := m.keys
	var snap snapshot
	_, err := watchtx.Run(ctx, m.rdb, watchtx.Options{MaxRetries: 10}, func(tx *redis.Tx) error {
		ids, err := tx.SMembers(ctx, k.UserIDs()).Result()
		if err != nil {
			return err
		}
		var money *redis.StringCmd
		var created, listings *redis.StringSliceCmd
		var listed *redis.MapStringStringCmd
		var last *redis.XMessageSliceCmd
		users := make([]*redis.SliceCmd, len(ids))
		invs := make([]*redis.StringSliceCmd, len(ids))
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			money = p.Get(ctx, k.Money())
			created = p.SMembers(ctx, k.Items())
			listings = p.ZRange(ctx, k.Market(), 0, -1)
			listed = p.HGetAll(ctx, k.Listed())
			last = p.XRevRangeN(ctx, k.Sales(), "+", "-", 1)
			for i, id := range ids {
				users[i] = p.HMGet(ctx, k.User(id), "funds", "initial")
				invs[i] = p.SMembers(ctx, k.Inventory(id))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		snap = snapshot{ids: ids, created: created.Val(), listings: listings.Val(), listed: map[string]int{}}
		if len(ids) > 0 {
			if snap.money, err = money.Int64(); err != nil {
				return fmt.Errorf("market: audit: money counter: %w", err)
			}
		}
		for item, n := range listed.Val() {
			snap.listed[item], _ = strconv.Atoi(n)
		}
		if msgs := last.Val(); len(msgs) > 0 {
			snap.lastSale = msgs[0].ID
		}
		for i, id := range ids {
			u := userState{id: id, inventory: invs[i].Val()}
			vals := users[i].Val()
			if len(vals) == 2 {
				u.rawFunds, _ = vals[0].(string)
				u.funds, err = strconv.ParseInt(u.rawFunds, 10, 64)
				u.fundsOK = err == nil
				if s, ok := vals[1].(string); ok {
					u.initial, err = strconv.ParseInt(s, 10, 64)
					u.initialOK = err == nil
				}
			}
			snap.users = append(snap.users, u)
		}
		return nil
	}, k.UserIDs())
	return snap, err
}

// total is a sum that remembers whether it overflowed.
type total struct {
	v  int64
	ok bool
}

func (t *total) add(d int64) {
	v, ok := addInt64(t.v, d)
	t.v, t.ok = v, t.ok && ok
}

// receipts reads the sale receipts up to and including last, in chunks,
// and returns each user's sales minus purchases and each item's number of
// sales.
func (m *Market) receipts(ctx context.Context, last string) (map[string]total, map[string]int, error) {
	net := map[string]total{}
	sold := map[string]int{}
	if last == "" {
		return net, sold, nil
	}
	start := "-"
	for {
		msgs, err := m.rdb.XRangeN(ctx, m.keys.Sales(), start, last, 10_000).Result()
		if err != nil {
			return nil, nil, fmt.Errorf("market: audit: receipts: %w", err)
		}
		for _, msg := range msgs {
			buyer, _ := msg.Values["buyer"].(string)
			seller, _ := msg.Values["seller"].(string)
			item, _ := msg.Values["item"].(string)
			ps, _ := msg.Values["price"].(string)
			price, err := strconv.ParseInt(ps, 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: audit: receipt %s has price %q", ErrCorrupt, msg.ID, ps)
			}
			for _, u := range []struct {
				id string
				d  int64
			}{{buyer, -price}, {seller, price}} {
				t, ok := net[u.id]
				if !ok {
					t.ok = true
				}
				t.add(u.d)
				net[u.id] = t
			}
			sold[item]++
		}
		if len(msgs) < 10_000 || msgs[len(msgs)-1].ID == last {
			return net, sold, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// pricesNotListed counts the sales whose price matches no listing left
// unmatched by an earlier sale (the multiset difference sold - listed).
func pricesNotListed(sold, listed []int64) int {
	if len(sold) == 1 && len(listed) == 1 { // the usual case
		if sold[0] == listed[0] {
			return 0
		}
		return 1
	}
	left := map[int64]int{}
	for _, p := range listed {
		left[p]++
	}
	over := 0
	for _, p := range sold {
		if left[p] == 0 {
			over++
			continue
		}
		left[p]--
	}
	return over
}
