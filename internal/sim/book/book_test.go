package book_test

import (
	"testing"

	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/book"
	"github.com/lockmarket/lockmarket/market"
)

func TestLookup(t *testing.T) {
	n := 0
	for _, sc := range sim.DefaultScenarios {
		for _, st := range market.Strategies {
			if _, ok := book.Lookup(sc.Listers, sc.Buyers, st); ok {
				n++
			}
		}
	}
	if n != 10 {
		t.Fatalf("book has %d cells, want 10 (nine of tables 6.1-6.3 and Lua 5x5)", n)
	}
	b, ok := book.Lookup(5, 1, market.Watch)
	if !ok {
		t.Fatal("no book cell for 5x1 watch")
	}
	if ub := b.UpperBounds(); len(ub) != 1 || ub[0] != "bought" {
		t.Errorf("upper bounds = %v", ub)
	}
	if _, ok := book.Lookup(1, 1, market.Lua); ok {
		t.Error("the book has no Lua 1x1 cell")
	}
}
