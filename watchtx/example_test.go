package watchtx_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/watchtx"
)

// exampleRedis starts an embedded Redis for an example.
var exampleRedis = redistest.Embedded

var errSoldOut = errors.New("sold out")

// Run sells one item of stock: it reads the count, checks it, and writes
// the new count only if nobody changed it meanwhile. Here another client
// sells one during the first attempt, whose EXEC is therefore aborted; the
// second attempt reads the new count and commits.
func ExampleRun() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()
	rdb.Set(ctx, "stock", 3, 0)

	attempts := 0
	retries, err := watchtx.Run(ctx, rdb, watchtx.Options{MaxRetries: 5}, func(tx *redis.Tx) error {
		attempts++
		n, err := tx.Get(ctx, "stock").Int()
		if err != nil {
			return err
		}
		if attempts == 1 {
			rdb.Decr(ctx, "stock") // another client, on another connection
		}
		if n == 0 {
			return errSoldOut
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "stock", n-1, 0)
			return nil
		})
		return err
	}, "stock")
	fmt.Println("retries:", retries, "error:", err)
	fmt.Println("stock:", rdb.Get(ctx, "stock").Val())
	// Output:
	// retries: 1 error: <nil>
	// stock: 1
}

// RunPiped does the same with the WATCH sent in the round trip of the
// read, on one connection for all attempts.
func ExampleRunPiped() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()
	rdb.Set(ctx, "stock", 1, 0)

	sell := func() (int, error) {
		return watchtx.RunPiped(ctx, rdb, watchtx.Options{}, "stock", func(tx *redis.Tx) error {
			var get *redis.StringCmd
			if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				watchtx.Watch(ctx, p, "stock")
				get = p.Get(ctx, "stock")
				return nil
			}); err != nil {
				return err
			}
			n, err := get.Int()
			if err != nil {
				return err
			}
			if n == 0 {
				return errSoldOut // RunPiped sends UNWATCH
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "stock", n-1, 0)
				return nil
			})
			return err
		})
	}
	for range 2 {
		retries, err := sell()
		fmt.Println("retries:", retries, "error:", err)
	}
	// Output:
	// retries: 0 error: <nil>
	// retries: 0 error: sold out
}

// A function that gives up before EXEC can send its own UNWATCH in the
// round trip of its last reads, and say so with Unwatched, so that
// RunPiped sends none.
func ExampleUnwatched() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()
	rdb.Set(ctx, "stock", 0, 0)
	rdb.Set(ctx, "restock:eta", "friday", 0)

	var eta string
	_, err := watchtx.RunPiped(ctx, rdb, watchtx.Options{}, "stock", func(tx *redis.Tx) error {
		var get *redis.StringCmd
		if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			watchtx.Watch(ctx, p, "stock")
			get = p.Get(ctx, "stock")
			return nil
		}); err != nil {
			return err
		}
		if get.Val() != "0" {
			return nil // ... sell, as in ExampleRunPiped
		}
		var next *redis.StringCmd
		_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			watchtx.Unwatch(ctx, p)
			next = p.Get(ctx, "restock:eta")
			return nil
		})
		if err != nil {
			return watchtx.Unwatched(err)
		}
		eta = next.Val()
		return watchtx.Unwatched(errSoldOut)
	})
	fmt.Println("error:", err, "- same error:", errors.Is(err, errSoldOut), "- restock:", eta)
	// Output:
	// error: sold out - same error: true - restock: friday
}
