// Package shipped checks Go Redis locks as they ship, unchanged, under
// the explorer: go-redsync/redsync (which sends each command from a
// goroutine it starts, and retries on real-time timers) and
// bsm/redislock kept alive by a watchdog on a time.Ticker.
package shipped

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/explore"
)

// work is the critical section every target runs once it holds the
// lock: it reads a shared counter and writes it back plus one while
// counting its section, in one transaction. No lease fences it.
func work(ctx context.Context, c *explore.Client) error {
	rdb := c.Redis()
	n, err := rdb.Get(ctx, c.Key("counter")).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, c.Key("counter"), n+1, 0)
		p.Incr(ctx, c.Key("sections"))
		return nil
	})
	return err
}

// lostUpdate is every target's Check: a lost update is fewer increments
// on the counter than sections that wrote.
func lostUpdate(ctx context.Context, rdb *redis.Client, ns explore.Namespace) error {
	counter, err := rdb.Get(ctx, ns.Key("counter")).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	sections, err := rdb.Get(ctx, ns.Key("sections")).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if counter != sections {
		return fmt.Errorf("lost update: %d sections wrote, the counter says %d",
			sections, counter)
	}
	return nil
}
