package market_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// Example sells one item under each strategy in turn: every strategy moves
// the money and the item the same way; they differ in how they keep
// concurrent clients apart.
func Example() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	m, err := market.New(rdb, "shop", market.WithLedger(market.NewLedger()))
	if err != nil {
		panic(err)
	}
	if _, err := m.CreateUser(ctx, "sam", "Sam", 0); err != nil {
		panic(err)
	}
	if _, err := m.CreateUser(ctx, "ann", "Ann", 100); err != nil {
		panic(err)
	}
	for _, s := range market.Strategies {
		item := "cup-" + string(s)
		if err := m.GrantItem(ctx, "sam", item); err != nil {
			panic(err)
		}
		if _, err := m.List(ctx, s, "sam", item, 10); err != nil {
			panic(err)
		}
		cost, err := m.Purchase(ctx, s, "ann", "sam", item, 10)
		fmt.Printf("%-6s bought: %v, retries %d, lock waits %d\n", s, err == nil, cost.Retries, cost.LockWaits)
	}
	ann, _ := m.GetUser(ctx, "ann")
	fmt.Println("ann:", ann.Funds, ann.Inventory)
	rep, _ := m.Audit(ctx)
	fmt.Println("violations:", rep.Total(), "ledger checked:", rep.LedgerChecked)
	// Output:
	// watch  bought: true, retries 0, lock waits 0
	// coarse bought: true, retries 0, lock waits 0
	// fine   bought: true, retries 0, lock waits 0
	// lua    bought: true, retries 0, lock waits 0
	// ann: 60 [cup-coarse cup-fine cup-lua cup-watch]
	// violations: 0 ledger checked: true
}

// ExampleMarket_Purchase shows the sentinel errors of a refused purchase:
// nothing is applied, and errors.Is tells the reasons apart.
func ExampleMarket_Purchase() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	m, _ := market.New(rdb, "shop")
	m.CreateUser(ctx, "sam", "Sam", 0)
	m.CreateUser(ctx, "ann", "Ann", 5)
	m.GrantItem(ctx, "sam", "lamp")
	m.List(ctx, market.Lua, "sam", "lamp", 8)

	_, err := m.Purchase(ctx, market.Fine, "ann", "sam", "lamp", 7)
	fmt.Println("at 7:", errors.Is(err, market.ErrPriceChanged))
	_, err = m.Purchase(ctx, market.Fine, "ann", "sam", "lamp", 8)
	fmt.Println("at 8:", errors.Is(err, market.ErrInsufficientFunds))
	_, err = m.Purchase(ctx, market.Fine, "ann", "sam", "vase", 8)
	fmt.Println("vase:", errors.Is(err, market.ErrListingNotFound))
	// Output:
	// at 7: true
	// at 8: true
	// vase: true
}

// exampleRedis starts an embedded Redis for an example.
var exampleRedis = redistest.Embedded
