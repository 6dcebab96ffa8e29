// Package roundtrip counts the network round trips and commands a go-redis
// client sends, so the cost of each market operation can be measured
// exactly instead of timed.
package roundtrip

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook: a single command is one round trip, a
// pipeline (or MULTI/EXEC transaction) of any length is one round trip.
// Add it with client.AddHook(counter). It is safe for concurrent use.
type Counter struct {
	trips, cmds atomic.Int64
}

// Counts is a snapshot of a Counter.
type Counts struct {
	RoundTrips int64 `json:"round_trips"`
	Commands   int64 `json:"commands"`
}

// Sub returns c minus o.
func (c Counts) Sub(o Counts) Counts {
	return Counts{RoundTrips: c.RoundTrips - o.RoundTrips, Commands: c.Commands - o.Commands}
}

// Load returns the counts so far.
func (c *Counter) Load() Counts {
	return Counts{RoundTrips: c.trips.Load(), Commands: c.cmds.Load()}
}

// DialHook passes dials through.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts one round trip per command.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts one round trip per pipeline.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
