package locking

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// QueueRelease queues the release of the hold of key by token (the same
// compare-and-delete script as Lock.Release) on a pipeline, typically
// inside a MULTI/EXEC transaction so that a commit and the release of the
// lock it ran under travel in one round trip and apply together. The
// command's value is 1 if the lock was released, 0 if token no longer
// held it. It is sent as EVAL, so it cannot fail with NOSCRIPT inside a
// transaction.
func QueueRelease(ctx context.Context, p redis.Pipeliner, key, token string) *redis.Cmd {
	return releaseScript.Eval(ctx, p, []string{key}, token)
}

// ReleaseToken releases the hold of key by token, as Lock.Release does. It
// returns ErrNotHeld if token no longer holds the lock.
func ReleaseToken(ctx context.Context, rdb redis.UniversalClient, key, token string) error {
	return (&Lock{key: key, token: token, rdb: rdb}).Release(ctx)
}
