package locking

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Fencing. A lease lock cannot stop a holder that was paused past its TTL
// from acting as if it still held the lock. Two remedies are offered:
//
//   - Lock.Fence (WithFencing): a number that grows with every
//     acquisition. A resource that remembers the highest fence it has
//     accepted and refuses lower ones (CheckFence) never applies a write of
//     an older holder after one of a newer holder. It does not refuse the
//     write of an expired holder when no newer holder has written yet.
//   - Lock.Held, called inside a WATCH transaction that watches the lock
//     key: EXEC then commits only if the lock key still holds this hold's
//     token at the moment of EXEC (an expiry, a release or a new holder in
//     between aborts it). This is the stronger guarantee, but it works only
//     when the protected data lives in the same Redis (and hash slot) as the
//     lock.

var fencedAcquireScript = redis.NewScript(`
-- KEYS: lock, fence counter; ARGV: token, ttl ms
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return redis.call('incr', KEYS[2])
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
	v, err := tx.Get(ctx, l.key).Result()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	if err != nil {
		return fmt.Errorf("locking: check %s: %w", l.key, err)
	}
	if v != l.token {
		return ErrNotHeld
	}
	return nil
}

// ErrStaleFence is returned by CheckFence when a newer fencing token has
// already been accepted for the resource.
var ErrStaleFence = errors.New("locking: stale fencing token")

var checkFenceScript = redis.NewScript(`
-- KEYS: highest fence accepted; ARGV: fence
local seen = tonumber(redis.call('get', KEYS[1]) or '0')
local fence = tonumber(ARGV[1])
if fence < seen then return 0 end
redis.call('set', KEYS[1], ARGV[1])
return 1`)

// CheckFence is the resource's side of fencing: it records fence as the
// highest accepted for the resource whose high-water mark is stored at
// seenKey, or returns ErrStaleFence if a higher one was accepted before. A
// holder may write any number of times with the same fence. The check and
// the write it guards must be atomic for the guarantee to hold: call it in
// the same script or transaction as the write, or keep seenKey in the
// storage that performs the write.
func CheckFence(ctx context.Context, rdb redis.Scripter, seenKey string, fence int64) error {
	ok, err := checkFenceScript.Run(ctx, rdb, []string{seenKey}, fence).Int()
	if err != nil {
		return fmt.Errorf("locking: check fence %s: %w", seenKey, err)
	}
	if ok == 0 {
		return ErrStaleFence
	}
	return nil
}
