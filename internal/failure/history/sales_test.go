package history

import (
	"context"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

func TestCheckSales(t *testing.T) {
	buy := func(buyer string, o Outcome, retried bool) Op {
		return Op{Kind: Purchase, Buyer: buyer, Seller: "s", Item: "i", Price: 5, Outcome: o, Retried: retried}
	}
	sale := func(buyer string) Sale { return Sale{Buyer: buyer, Seller: "s", Item: "i", Price: 5} }
	listing := Op{Kind: List, Seller: "s", Item: "i", Price: 5, Outcome: Ok}
	tests := []struct {
		name     string
		ops      []Op
		receipts map[Sale]int
		want     SalesReport
	}{
		{"acknowledged and kept", []Op{listing, buy("b", Ok, false)}, map[Sale]int{sale("b"): 1},
			SalesReport{Counts: Counts{Attempted: 1, Ok: 1}, Receipts: 1}},
		{"acknowledged and lost", []Op{buy("b", Ok, false)}, nil,
			SalesReport{Counts: Counts{Attempted: 1, Ok: 1}, Lost: 1}},
		{"applied twice", []Op{buy("b", Ok, true)}, map[Sale]int{sale("b"): 2},
			SalesReport{Counts: Counts{Attempted: 1, Ok: 1}, Receipts: 2, Duplicated: 1}},
		{"nobody asked", nil, map[Sale]int{sale("b"): 1},
			SalesReport{Receipts: 1, Duplicated: 1}},
		{"unknown, applied", []Op{buy("b", Unknown, true)}, map[Sale]int{sale("b"): 1},
			SalesReport{Counts: Counts{Attempted: 1, Unknown: 1}, Receipts: 1}},
		{"unknown, not applied", []Op{buy("b", Unknown, false)}, nil,
			SalesReport{Counts: Counts{Attempted: 1, Unknown: 1}}},
		{"refused on a retry, applied", []Op{buy("b", Fail, true)}, map[Sale]int{sale("b"): 1},
			SalesReport{Counts: Counts{Attempted: 1, Failed: 1}, Receipts: 1, RefusedApplied: 1}},
		{"refused outright, applied", []Op{buy("b", Fail, false)}, map[Sale]int{sale("b"): 1},
			SalesReport{Counts: Counts{Attempted: 1, Failed: 1}, Receipts: 1, Duplicated: 1}},
		{"refused, then bought", []Op{buy("b", Fail, false), buy("b", Ok, false)}, map[Sale]int{sale("b"): 1},
			SalesReport{Counts: Counts{Attempted: 2, Ok: 1, Failed: 1}, Receipts: 1}},
		{"another buyer's receipt", []Op{buy("b", Ok, false)}, map[Sale]int{sale("c"): 1},
			SalesReport{Counts: Counts{Attempted: 1, Ok: 1}, Receipts: 1, Lost: 1, Duplicated: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckSales(tt.ops, tt.receipts)
			if len(got.Details) == 0 != (got.Lost+got.Duplicated+got.RefusedApplied == 0) {
				t.Errorf("details %q for %+v", got.Details, got)
			}
			got.Details = nil
			if got.Counts != tt.want.Counts || got.Receipts != tt.want.Receipts || got.Lost != tt.want.Lost ||
				got.Duplicated != tt.want.Duplicated || got.RefusedApplied != tt.want.RefusedApplied {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestReadSales reads back the receipts of purchases made through the
// market, more than one chunk of them.
func TestReadSales(t *testing.T) {
	defer func(n int64) { readSalesChunk = n }(readSalesChunk)
	readSalesChunk = 2
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m, err := market.New(b.Client, "sales")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.CreateUser(ctx, "s", "Seller", 0); err != nil {
			t.Fatal(err)
		}
		if _, err := m.CreateUser(ctx, "b", "Buyer", 1_000_000); err != nil {
			t.Fatal(err)
		}
		const n = 3
		items, prices := make([]string, n), make([]int64, n)
		for i := range n {
			items[i], prices[i] = string(rune('a'+i)), int64(i+1)
		}
		if err := m.CreateListings(ctx, "s", items, prices); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := m.Purchase(ctx, market.Lua, "b", "s", items[i], prices[i]); err != nil {
				t.Fatal(err)
			}
		}
		got, err := ReadSales(ctx, b.Client, "sales")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("%d sales, want %d: %v", len(got), n, got)
		}
		for i := range n {
			if s := (Sale{Buyer: "b", Seller: "s", Item: items[i], Price: prices[i]}); got[s] != 1 {
				t.Errorf("%s: %d receipts, want 1", s, got[s])
			}
		}
	})
}
