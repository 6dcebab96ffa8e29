package queue

import "context"

// Enqueue queues token as a waiter of m that never blocks on its grant,
// standing in for a waiter caught between being granted and giving up.
func (m *Mutex) Enqueue(ctx context.Context, token string) error {
	_, err := queueAcquireScript.Run(ctx, m.rdb, m.keys(), m.args(token, m.ttl.Milliseconds(), m.aliveTTL().Milliseconds(), "")...).Slice()
	return err
}

// Leave runs the script a waiter runs when it gives up.
func (m *Mutex) Leave(ctx context.Context, token string) { m.leave(ctx, token) }

// ReleaseToken releases the hold of token as Lock.Release does.
func (m *Mutex) ReleaseToken(ctx context.Context, token string) error {
	return m.releaseToken(ctx, token)
}

// AliveKey is the liveness key of a queued token.
func AliveKey(key, token string) string { return alivePrefix(key) + token }
