package explore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/redis/go-redis/v9"
)

// releaseScript deletes the lock only while it holds the caller's token.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// lockTarget is a target of a lock written in Go: each client takes the
// lock with acquire, believes it holds it for a lease, and releases it
// with a compare-and-delete script.
func lockTarget(
	name string,
	acquire func(
		ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration,
	) (bool, error),
) *explore.Target {
	return &explore.Target{
		Name: name,
		Client: func(ctx context.Context, c *explore.Client) error {
			rdb, key, token := c.Redis(), c.Key("lock:job"), "token-"+c.Name()
			ok, err := acquire(ctx, rdb, key, token, c.Lease())
			if err != nil || !ok {
				return err
			}
			c.Holding(c.Lease())
			// ... the critical section ...
			c.Released()
			return releaseScript.Run(ctx, rdb, []string{key}, token).Err()
		},
	}
}

// Check explores a lock written in Go: one whose acquire reads the key,
// then sets it if it was empty (two round trips: both clients can read it
// empty), and one that sets it only if it does not exist, in one command.
// The clients' commands run on the Redis given, in the orders the
// explorer chooses.
func ExampleCheck() {
	rdb, stop := redistest.Embedded() // an embedded miniredis; any Redis will do
	defer stop()
	ctx := context.Background()

	getThenSet := lockTarget(
		"get then set",
		func(
			ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration,
		) (bool, error) {
			err := rdb.Get(ctx, key).Err()
			if !errors.Is(err, redis.Nil) {
				return false, err // held (or an error)
			}
			return true, rdb.Set(ctx, key, token, ttl).Err()
		},
	)
	setNX := lockTarget(
		"set nx",
		func(
			ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration,
		) (bool, error) {
			return rdb.SetNX(ctx, key, token, ttl).Result()
		},
	)

	// The bounds: two clients, one critical section each, where the one
	// fault is a crash of a client.
	o := explore.Options{FaultKinds: []explore.Fault{explore.Crash}}
	for _, t := range []*explore.Target{getThenSet, setNX} {
		res, err := explore.Check(ctx, rdb, t, o)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, c := range res.Counterexamples {
			fmt.Printf("%s: %s: %s\n", t.Name, c.Property, c.Message)
		}
		if len(res.Counterexamples) == 0 {
			fmt.Printf("%s: no violation, every schedule searched: %v\n", t.Name, res.Exhaustive)
		}
	}
	// Output:
	// get then set: mutual_exclusion: at t=0s, A (lease until t=10s) and B (lease until t=10s) hold the lock at once, with leases that have not run out
	// set nx: no violation, every schedule searched: true
}
