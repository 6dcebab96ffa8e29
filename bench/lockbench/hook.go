package lockbench

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// counter is a go-redis hook counting round trips (a command, or a
// pipeline of any length) and lock attempts (SET ... NX commands, which is
// how package locking and redsync try a lock).
type counter struct {
	trips, setNX atomic.Int64
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		if isSetNX(cmd) {
			c.setNX.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		for _, cmd := range cmds {
			if isSetNX(cmd) {
				c.setNX.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

func isSetNX(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "setnx":
		return true
	case "set":
		args := cmd.Args()
		if len(args) < 4 {
			return false
		}
		for _, a := range args[3:] {
			if s, ok := a.(string); ok && strings.EqualFold(s, "nx") {
				return true
			}
		}
	}
	return false
}
