package redisconn

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// MiniWatchHook works around a miniredis (v2.40) defect: ZREM and SREM
// that leave members behind do not invalidate a WATCH on their key, so an
// optimistic transaction that should abort commits instead. Real Redis
// invalidates the WATCH on any change.
//
// The hook, installed only on clients that talk to miniredis (Open does so
// for its embedded fallback), follows every ZREM and SREM queued in a
// MULTI/EXEC pipeline with PEXPIRE and PERSIST on the same key, inside the
// same transaction: together they change nothing (the market's keys never
// carry a TTL) but make miniredis bump the key's version as Redis would.
// Add it with client.AddHook(redisconn.MiniWatchHook{}).
type MiniWatchHook struct{}

// DialHook passes dials through.
func (MiniWatchHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook passes single commands through.
func (MiniWatchHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook adds the version bumps to MULTI/EXEC pipelines.
func (MiniWatchHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) < 3 || cmds[0].Name() != "multi" || cmds[len(cmds)-1].Name() != "exec" {
			return next(ctx, cmds)
		}
		var bumped []redis.Cmder
		for _, c := range cmds {
			bumped = append(bumped, c)
			name := strings.ToLower(c.Name())
			if (name == "zrem" || name == "srem") && len(c.Args()) > 1 {
				key, _ := c.Args()[1].(string)
				bumped = append(bumped,
					redis.NewBoolCmd(ctx, "pexpire", key, int64(1)<<40),
					redis.NewBoolCmd(ctx, "persist", key))
			}
		}
		if len(bumped) == len(cmds) {
			return next(ctx, cmds)
		}
		// Replies are matched to commands by position, so the caller's own
		// commands still get their own replies.
		return next(ctx, bumped)
	}
}
