package redisconn

import (
	"context"
	"net"

	"github.com/redis/go-redis/v9"
)

// SizedClient returns a new client to the same server(s) as c, with a
// connection pool of poolSize connections and the given hooks
// (MiniWatchHook on miniredis, for instance), so that each worker of a
// simulator cell has a connection of its own instead of queueing for one
// of go-redis's default 10 per CPU. It supports *redis.Client and
// *redis.ClusterClient; any other client is returned as is. Close the
// returned client when done unless it is c itself.
func SizedClient(c redis.UniversalClient, poolSize int, hooks ...redis.Hook) redis.UniversalClient {
	return SizedClientDialing(c, poolSize, nil, hooks...)
}

// Dial makes a client's connections (redis.Options.Dialer).
type Dial func(ctx context.Context, network, addr string) (net.Conn, error)

// SizedClientDialing is SizedClient whose connections are made by dial
// (netdelay.Dialer.Dial, to add a round trip to each), or as c makes them
// when dial is nil.
func SizedClientDialing(c redis.UniversalClient, poolSize int, dial Dial, hooks ...redis.Hook) redis.UniversalClient {
	var out redis.UniversalClient
	switch c := c.(type) {
	case *redis.Client:
		opts := *c.Options()
		opts.PoolSize = max(poolSize, opts.PoolSize)
		// The copied options point at the first client's initialised
		// maintenance-notification and push-notification state; let the new
		// client make its own.
		opts.MaintNotificationsConfig = nil
		opts.PushNotificationProcessor = nil
		if dial != nil {
			opts.Dialer = dial
		}
		out = redis.NewClient(&opts)
	case *redis.ClusterClient:
		opts := *c.Options()
		opts.PoolSize = max(poolSize, opts.PoolSize)
		opts.MaintNotificationsConfig = nil
		opts.PushNotificationProcessor = nil
		if dial != nil {
			opts.Dialer = dial
		}
		out = redis.NewClusterClient(&opts)
	default:
		return c
	}
	for _, h := range hooks {
		out.AddHook(h)
	}
	return out
}
