package market_test

import (
	"context"
	"math"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestDeleteRemovesOnlyItsMarket: Delete removes every key of its market,
// locks and bookkeeping included, and no key of another market.
func TestDeleteRemovesOnlyItsMarket(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		var ms []*market.Market
		for _, name := range []string{"del", "del2", "de"} {
			m, err := newMarket(b.Client, name)
			must(t, err)
			user(t, m, "sam", 10)
			user(t, m, "ann", 10)
			listed(t, m, market.Fine, "sam", "cup", 3)
			_, err = m.Purchase(ctx, market.Fine, "ann", "sam", "cup", 3)
			must(t, err)
			must(t, b.Client.Set(ctx, markettrace.KeysOf(m).MarketLock(), "x", 0).Err())
			ms = append(ms, m)
		}
		count := func(m *market.Market) int {
			keys, err := b.Client.Keys(ctx, m.Keys().Pattern()).Result()
			must(t, err)
			return len(keys)
		}
		before := count(ms[1])
		must(t, ms[0].Delete(ctx))
		if n := count(ms[0]); n != 0 {
			t.Fatalf("%d keys of the deleted market left", n)
		}
		if n := count(ms[1]); n != before || n == 0 {
			t.Fatalf("the other market has %d keys, had %d", n, before)
		}
		audit(t, ms[2])
	})
}

// TestAuditWithoutLedger: a Market made without WithLedger keeps no record
// of its operations; its audit checks the state and says that sales were
// not checked.
func TestAuditWithoutLedger(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m, err := market.New(b.Client, "noledger")
		must(t, err)
		if m.Ledger() != nil {
			t.Fatal("a market without WithLedger has a ledger")
		}
		user(t, m, "sam", 0)
		user(t, m, "ann", 10)
		listed(t, m, market.Lua, "sam", "cup", 3)
		_, err = m.Purchase(ctx, market.Lua, "ann", "sam", "cup", 3)
		must(t, err)
		rep, err := m.Audit(ctx)
		must(t, err)
		if rep.Total() != 0 || rep.LedgerChecked {
			t.Fatalf("audit %+v ledger checked %v; want clean and not checked", rep.Violations, rep.LedgerChecked)
		}
		// The state checks still run: money created out of band is found.
		must(t, b.Client.HIncrBy(ctx, markettrace.KeysOf(m).User("ann"), "funds", 1).Err())
		rep, err = m.Audit(ctx)
		must(t, err)
		if rep.MoneyNotConserved != 1 {
			t.Fatalf("audit %+v, want money not conserved", rep.Violations)
		}
	})
}

// TestListingsHugeLimit: offset+limit beyond int64 reads to the end.
func TestListingsHugeLimit(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m, err := newMarket(b.Client, "page")
		must(t, err)
		user(t, m, "sam", 0)
		for i, item := range []string{"a", "b", "c", "d"} {
			listed(t, m, market.Lua, "sam", item, int64(i+1))
		}
		got, total, err := m.Listings(ctx, 2, math.MaxInt64)
		must(t, err)
		if total != 4 || len(got) != 2 || got[0].Item != "c" || got[1].Item != "d" {
			t.Fatalf("Listings(2, MaxInt64) = %v (total %d), want c and d of 4", got, total)
		}
	})
}
