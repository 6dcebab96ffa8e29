package locking

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/watchtx"
)

// Fencing. A lease lock cannot stop a holder that was paused past its TTL
// from acting as if it still held the lock. Two remedies are offered:
//
//   - Lock.Fence (WithFencing): a number that grows with every
//     acquisition. A resource that remembers the highest fence it has
//     accepted and refuses lower ones, atomically with the write
//     (FencedWrite), never applies a write of an older holder after one of
//     a newer holder. It does not refuse the write of an expired holder
//     when no newer holder has written yet.
//   - Lock.Held, called inside a WATCH transaction that watches the lock
//     key: EXEC then commits only if the lock key still holds this hold's
//     token at the moment of EXEC (an expiry, a release or a new holder in
//     between aborts it). This is the stronger guarantee, but it works only
//     when the protected data lives in the same Redis (and hash slot) as the
//     lock.

// fencedAcquireScript takes the lock and returns the new fence, or 0 if
// someone else holds it. A key already holding the token is a retried send
// of an attempt that took it: no acquisition has incremented the counter
// since, so its value is that attempt's fence.
var fencedAcquireScript = redis.NewScript(`
-- KEYS: lock, fence counter; ARGV: token, ttl ms
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return redis.call('incr', KEYS[2])
end
if redis.call('get', KEYS[1]) == ARGV[1] then
	return tonumber(redis.call('get', KEYS[2])) or redis.call('incr', KEYS[2])
end
return 0`)

// Held reports, inside a transaction that WATCHes l.Key(), whether the
// lock still holds this hold's token: nil if it does, ErrNotHeld if not.
// Together with the WATCH it makes the transaction's EXEC fail
// (redis.TxFailedErr) if the lock changes hands or expires before EXEC, so
// a write is committed only by the current holder:
//
//	err := rdb.Watch(ctx, func(tx *redis.Tx) error {
//		if err := l.Held(ctx, tx); err != nil {
//			return err
//		}
//		// ... reads ...
//		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { ...writes...; return nil })
//		return err
//	}, l.Key(), otherKeys...)
func (l *Lock) Held(ctx context.Context, tx *redis.Tx) error {
	v, err := tx.Get(ctx, l.Key()).Result()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	if err != nil {
		return fmt.Errorf("locking: check %s: %w", l.Key(), err)
	}
	if v != l.Token() {
		return ErrNotHeld
	}
	return nil
}

// ErrStaleFence is returned by FencedWrite when a higher fence has already
// been accepted for the resource: the write was not applied.
var ErrStaleFence = errors.New("locking: stale fencing token")

// ErrNoFence is returned by FencedWrite for a fence below 1: a hold of a
// mutex made without WithFencing has fence 0.
var ErrNoFence = errors.New("locking: no fencing token (make the mutex WithFencing)")

// FencedWrite is the resource's side of fencing, for a resource kept in
// Redis: it applies write only if fence is at least the highest fence
// accepted so far for the resource, whose high-water mark is stored at
// seenKey, records fence there, and does both in one MULTI/EXEC, so no
// higher fence can be accepted between the check and the write. It returns
// ErrStaleFence, having written nothing, if a higher fence was accepted
// before. A holder may write any number of times with its fence.
//
// It WATCHes seenKey, reads it, and queues the record and write's commands
// in MULTI/EXEC; if another write changes seenKey before EXEC, EXEC is
// aborted and the check runs again (until ctx ends), so a write overtaken
// by a newer holder's is refused, never applied after it. write only
// queues commands on p, and may be called more than once. On a cluster,
// the keys write touches must share seenKey's hash slot. As with any
// MULTI/EXEC, a queued command that Redis refuses (a wrong type, say) does
// not undo the others: the fence is recorded all the same.
//
// Use it where the resource is stored in a Redis other than the lock's, or
// shared by several locks' holders; for data in the lock's own Redis,
// checking the lock key at EXEC (Lock.Held) also refuses an expired
// holder's write when nobody else has written yet.
func FencedWrite(ctx context.Context, rdb redis.UniversalClient, seenKey string, fence int64, write func(p redis.Pipeliner)) error {
	if fence < 1 {
		return fmt.Errorf("%w: fence %d for %s", ErrNoFence, fence, seenKey)
	}
	_, err := watchtx.Run(ctx, rdb, watchtx.Options{}, func(tx *redis.Tx) error {
		seen, err := tx.Get(ctx, seenKey).Int64()
		switch {
		case errors.Is(err, redis.Nil):
			seen = 0
		case err != nil:
			return fmt.Errorf("locking: fenced write: read %s: %w", seenKey, err)
		}
		if fence < seen {
			return fmt.Errorf("%w: fence %d, %s accepted %d", ErrStaleFence, fence, seenKey, seen)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if fence > seen {
				p.Set(ctx, seenKey, fence, 0)
			}
			write(p)
			return nil
		})
		return err
	}, seenKey)
	if err != nil && !errors.Is(err, ErrStaleFence) && !errors.Is(err, ErrNoFence) {
		return fmt.Errorf("locking: fenced write %s: %w", seenKey, err)
	}
	return err
}
