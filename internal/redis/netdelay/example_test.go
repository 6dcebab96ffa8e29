package netdelay_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/netdelay"
)

func ExampleStart() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	ctx := context.Background()

	// Every round trip to mr through p costs 2 ms more.
	p, err := netdelay.Start(ctx, mr.Addr(), 2*time.Millisecond)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer rdb.Close()

	rdb.Set(ctx, "item", "sword", 0)
	fmt.Println(rdb.Get(ctx, "item").Val())
	fmt.Println("asked for:", p.RTT())

	// What a run reports is the round trip measured through p.
	if _, err := netdelay.MeasureRTT(ctx, rdb, 20); err != nil {
		panic(err)
	}
	// Output:
	// sword
	// asked for: 2ms
}
