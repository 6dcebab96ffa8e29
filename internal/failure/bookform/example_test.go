package bookform_test

import (
	"context"
	"fmt"

	"github.com/lockmarket/lockmarket/internal/failure/bookform"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/internal/testsupport/roundtrip"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// ExampleOptions runs the book's command sequences with the book's lock:
// the same purchase as the lean form, paid for in more round trips
// (counted here by a go-redis hook; see markettrace.ClientForm).
func ExampleOptions() {
	rdb, stop := redistest.Embedded()
	defer stop()
	ctx := context.Background()
	trips := &roundtrip.Counter{}
	rdb.AddHook(trips)

	m, _ := market.New(rdb, "shop", bookform.Options(rdb, markettrace.BookClient)...)
	m.CreateUser(ctx, "sam", "Sam", 0)
	m.CreateUser(ctx, "ann", "Ann", 100)
	for _, s := range market.Strategies {
		var err error
		var cost roundtrip.Counts
		for _, item := range []string{"mug-" + string(s), "jug-" + string(s)} {
			m.GrantItem(ctx, "sam", item)
			m.List(ctx, s, "sam", item, 10)
			before := trips.Load() // the second purchase finds its script cached
			_, err = m.Purchase(ctx, s, "ann", "sam", item, 10)
			cost = trips.Load().Sub(before)
		}
		fmt.Printf("%-6s bought: %v in %d round trips\n", s, err == nil, cost.RoundTrips)
	}
	// Output:
	// watch  bought: true in 4 round trips
	// coarse bought: true in 9 round trips
	// fine   bought: true in 9 round trips
	// lua    bought: true in 1 round trips
}
