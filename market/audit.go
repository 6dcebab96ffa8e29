package market

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
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
	// SalesChecked is false when the Market keeps no Ledger: then the
	// "paid once at the listed price" invariant was not checked.
	SalesChecked bool `json:"sales_checked"`
	// Users, Items and Listings are what the audit looked at.
	Users, Items, Listings int `json:"-"`
}

func (r *Report) note(format string, args ...any) {
	if len(r.Details) < 20 {
		r.Details = append(r.Details, fmt.Sprintf(format, args...))
	}
}

// Audit checks the market's invariants on its current state; run it when
// no operation is in flight:
//  1. the sum of all funds equals the money put in;
//  2. no user's funds are negative;
//  3. every created item is in exactly one place (one listing or one
//     inventory);
//  4. every sale this Market acknowledged was paid exactly once at the
//     listed price (checked against its Ledger, for the users and items
//     created through it; only when it has one, see WithLedger and
//     Report.SalesChecked).
func (m *Market) Audit(ctx context.Context) (Report, error) {
	var rep Report
	k := m.keys
	ids, err := m.rdb.SMembers(ctx, k.UserIDs()).Result()
	if err != nil {
		return rep, err
	}
	money, err := m.rdb.Get(ctx, k.Money()).Int64()
	if err != nil && len(ids) > 0 {
		return rep, fmt.Errorf("audit: money counter: %w", err)
	}
	created, err := m.rdb.SMembers(ctx, k.Items()).Result()
	if err != nil {
		return rep, err
	}
	listings, err := m.rdb.ZRange(ctx, k.Market(), 0, -1).Result()
	if err != nil {
		return rep, err
	}
	rep.Users, rep.Items, rep.Listings = len(ids), len(created), len(listings)

	places := make(map[string]int, len(created))
	for _, it := range created {
		places[it] = 0
	}
	place := func(item, where string) {
		n, ok := places[item]
		if !ok {
			rep.ItemMisplaced++
			rep.note("item %s in %s was never created", item, where)
			places[item] = 1
			return
		}
		places[item] = n + 1
	}
	for _, member := range listings {
		item, _, _ := SplitMember(member)
		place(item, "the market")
	}

	funds := make(map[string]int64, len(ids))
	var sum int64
	const batch = 500
	for start := 0; start < len(ids); start += batch {
		part := ids[start:min(start+batch, len(ids))]
		fcmds := make([]*redis.StringCmd, len(part))
		icmds := make([]*redis.StringSliceCmd, len(part))
		_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range part {
				fcmds[i] = p.HGet(ctx, k.User(id), "funds")
				icmds[i] = p.SMembers(ctx, k.Inventory(id))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return rep, err
		}
		for i, id := range part {
			f, err := strconv.ParseInt(fcmds[i].Val(), 10, 64)
			if err != nil {
				rep.note("user %s has unreadable funds %q", id, fcmds[i].Val())
			}
			funds[id] = f
			sum += f
			if f < 0 {
				rep.NegativeFunds++
				rep.note("user %s has negative funds %d", id, f)
			}
			for _, item := range icmds[i].Val() {
				place(item, "inventory of "+id)
			}
		}
	}
	if sum != money {
		rep.MoneyNotConserved = 1
		rep.note("funds add up to %d, but %d was put in", sum, money)
	}
	for _, it := range created {
		if n := places[it]; n != 1 {
			rep.ItemMisplaced++
			rep.note("item %s is in %d places", it, n)
		}
	}

	l := m.ledger
	if l == nil {
		return rep, nil
	}
	rep.SalesChecked = true
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, init := range l.initial {
		f, ok := funds[id]
		if !ok {
			continue
		}
		if want := init + l.net[id]; f != want {
			rep.NotPaidOnce++
			rep.note("user %s has %d, acknowledged operations leave %d", id, f, want)
		}
	}
	for item, r := range l.items {
		if len(r.sold) > len(r.listed) {
			rep.NotPaidOnce += len(r.sold) - len(r.listed)
			rep.note("item %s sold %d times but listed %d", item, len(r.sold), len(r.listed))
			continue
		}
		if over := pricesNotListed(r.sold, r.listed); over > 0 {
			rep.NotPaidOnce += over
			rep.note("item %s sold %d times at a price it was not listed at", item, over)
		}
	}
	return rep, nil
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
