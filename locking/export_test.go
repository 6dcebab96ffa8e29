package locking

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// HasWakeHub reports whether rdb has a live wake-up subscription.
func HasWakeHub(rdb redis.UniversalClient) bool {
	wakeHubs.Lock()
	defer wakeHubs.Unlock()
	return wakeHubs.m[rdb] != nil
}

// Enqueue queues token as a waiter of m that never blocks on its grant,
// standing in for a waiter caught between being granted and giving up.
func (m *QueueMutex) Enqueue(ctx context.Context, token string) error {
	_, err := queueAcquireScript.Run(ctx, m.rdb, m.keys(), m.args(token, m.ttl.Milliseconds(), m.aliveTTL().Milliseconds(), "")...).Slice()
	return err
}

// Leave runs the script a waiter runs when it gives up.
func (m *QueueMutex) Leave(ctx context.Context, token string) { m.leave(ctx, token) }

// AliveKey is the liveness key of a queued token.
func AliveKey(key, token string) string { return alivePrefix(key) + token }
