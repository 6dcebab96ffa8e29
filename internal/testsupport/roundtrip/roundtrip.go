// Package roundtrip counts the network round trips and commands a go-redis
// client sends, and can record which commands each round trip carried, so
// the cost of each market operation can be measured exactly instead of
// timed.
package roundtrip

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook: a single command is one round trip, a
// pipeline (or MULTI/EXEC transaction) of any length is one round trip.
// Add it with client.AddHook(counter). It is safe for concurrent use.
type Counter struct {
	// Record keeps the command names of each round trip, for Take. Set it
	// before adding the hook.
	Record bool

	trips, cmds atomic.Int64

	mu  sync.Mutex
	log []string
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
		c.record(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts one round trip per pipeline.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(int64(len(cmds)))
		c.record(cmds...)
		return next(ctx, cmds)
	}
}

// record logs one round trip's command names, joined by spaces, when
// Record is set. A SET carries its options ("set+nx" is SETNX, "set+ex+nx"
// a lease lock), which say which lock it is.
func (c *Counter) record(cmds ...redis.Cmder) {
	if !c.Record {
		return
	}
	names := make([]string, len(cmds))
	for i, cmd := range cmds {
		names[i] = cmd.Name()
		if cmd.Name() == "set" && len(cmd.Args()) > 3 {
			for _, a := range cmd.Args()[3:] {
				if w, ok := a.(string); ok {
					names[i] += "+" + strings.ToLower(w)
				}
			}
		}
	}
	c.mu.Lock()
	c.log = append(c.log, strings.Join(names, " "))
	c.mu.Unlock()
}

// Take returns the round trips recorded since the last call (Record), one
// string per round trip, its command names in order.
func (c *Counter) Take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.log
	c.log = nil
	return t
}
