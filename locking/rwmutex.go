package locking

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking/internal/lease"
)

// RWMutex is a lease lock that admits many readers or one writer. Its keys
// all share one hash tag, so it works on Redis Cluster:
//
//   - NAME:readers, a sorted set of reader tokens scored by the server time
//     (ms) at which each hold expires; the key itself expires with the
//     last of them;
//   - NAME:writer, the writer's token (SET NX PX);
//   - NAME:writer-waiting, the token of a writer waiting for readers to
//     leave; while it exists no new reader is admitted, so a stream of
//     overlapping readers cannot starve writers. It expires after the
//     lease length if its writer gives up without clearing it.
//
// Each reader has its own token and releases or extends only its own hold
// (the flaw of the seed's read-write lock was that one reader's release
// removed another's). Expired reader holds are dropped by the next
// acquisition. Neither side is reentrant.
type RWMutex struct {
	rdb                      redis.UniversalClient
	name                     string
	readers, writer, waiting string
	ttl                      time.Duration
	backoff                  Backoff
}

// NewRWMutex returns the read-write lock called name, whose holds last ttl
// unless extended. It panics if ttl is below 1 ms (see the package doc's
// Configuration).
func NewRWMutex(rdb redis.UniversalClient, name string, ttl time.Duration, opts ...RWMutexOption) *RWMutex {
	lease.MustTTL("locking: NewRWMutex", ttl)
	rw := &RWMutex{
		rdb: rdb, name: name, ttl: ttl, backoff: DefaultBackoff,
		readers: lease.Sibling(name, ":readers"),
		writer:  lease.Sibling(name, ":writer"),
		waiting: lease.Sibling(name, ":writer-waiting"),
	}
	for _, o := range opts {
		o.applyRWMutex(rw)
	}
	return rw
}

// Name is the lock's name, from which its keys are derived.
func (rw *RWMutex) Name() string { return rw.name }

// Keys returns the lock's keys: readers, writer, writer-waiting.
func (rw *RWMutex) Keys() (readers, writer, waiting string) { return rw.readers, rw.writer, rw.waiting }

// TTL is the lease length of each hold.
func (rw *RWMutex) TTL() time.Duration { return rw.ttl }

const luaNow = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

var (
	readAcquireScript = redis.NewScript(luaNow + `
-- KEYS: readers, writer, waiting; ARGV: token, ttl ms
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
if redis.call('exists', KEYS[2]) == 1 or redis.call('exists', KEYS[3]) == 1 then return 0 end
local ttl = tonumber(ARGV[2])
redis.call('zadd', KEYS[1], now + ttl, ARGV[1])
if redis.call('pttl', KEYS[1]) < ttl then redis.call('pexpire', KEYS[1], ttl) end
return 1`)
	readExtendScript = redis.NewScript(luaNow + `
-- KEYS: readers; ARGV: token, ttl ms
local s = redis.call('zscore', KEYS[1], ARGV[1])
if not s or tonumber(s) <= now then return 0 end
local ttl = tonumber(ARGV[2])
redis.call('zadd', KEYS[1], now + ttl, ARGV[1])
if redis.call('pttl', KEYS[1]) < ttl then redis.call('pexpire', KEYS[1], ttl) end
return 1`)
	readReleaseScript = redis.NewScript(luaNow + `
-- KEYS: readers; ARGV: token
local s = redis.call('zscore', KEYS[1], ARGV[1])
if not s then return 0 end
redis.call('zrem', KEYS[1], ARGV[1])
if tonumber(s) <= now then return 0 end
return 1`)
	writeAcquireScript = redis.NewScript(luaNow + `
-- KEYS: readers, writer, waiting; ARGV: token, ttl ms
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
local w = redis.call('get', KEYS[3])
if redis.call('exists', KEYS[2]) == 0 and redis.call('zcard', KEYS[1]) == 0 then
	redis.call('set', KEYS[2], ARGV[1], 'PX', ARGV[2])
	if w == ARGV[1] then redis.call('del', KEYS[3]) end
	return 1
end
if not w or w == ARGV[1] then redis.call('set', KEYS[3], ARGV[1], 'PX', ARGV[2]) end
return 0`)
	writeGiveUpScript = redis.NewScript(`
-- KEYS: waiting; ARGV: token
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`)
)

// RWLock is one read or write hold of an RWMutex. Its Key is the writer
// key for the writer's hold, the readers key for a read hold.
type RWLock struct {
	hold
	rw    *RWMutex
	write bool
}

// Write reports whether this is the writer's hold.
func (h *RWLock) Write() bool { return h.write }

func (rw *RWMutex) try(ctx context.Context, write bool, token string) (*RWLock, error) {
	script := readAcquireScript
	if write {
		script = writeAcquireScript
	}
	sent := ClockFrom(ctx).Now()
	n, err := script.Run(ctx, rw.rdb, []string{rw.readers, rw.writer, rw.waiting}, token, rw.ttl.Milliseconds()).Int()
	if err != nil {
		return nil, fmt.Errorf("locking: acquire %s: %w", rw.name, err)
	}
	if n == 0 {
		return nil, ErrNotAcquired
	}
	key := rw.readers
	if write {
		key = rw.writer
	}
	return &RWLock{hold: newHold(key, token, sent.Add(rw.ttl)), rw: rw, write: write}, nil
}

// TryAcquireRead makes one attempt at a read hold; ErrNotAcquired when a
// writer holds the lock or waits for it.
func (rw *RWMutex) TryAcquireRead(ctx context.Context) (*RWLock, error) {
	return rw.try(ctx, false, lease.NewToken())
}

// TryAcquireWrite makes one attempt at the write hold; ErrNotAcquired when
// a writer or any reader holds the lock. A failed attempt marks this
// caller as a waiting writer (unless another writer already is), which
// keeps new readers out until the marker's owner gets the lock or the
// marker expires after the lease length; use AcquireWrite, which clears
// the marker when it gives up, unless the caller retries itself.
func (rw *RWMutex) TryAcquireWrite(ctx context.Context) (*RWLock, error) {
	return rw.try(ctx, true, lease.NewToken())
}

// AcquireRead waits for a read hold until it is granted or ctx ends (then
// the error wraps ErrNotAcquired and the context's error).
func (rw *RWMutex) AcquireRead(ctx context.Context) (*RWLock, error) {
	return rw.acquire(ctx, false)
}

// AcquireWrite waits for the write hold until it is granted or ctx ends
// (then the error wraps ErrNotAcquired and the context's error). While it
// waits, new readers are refused.
func (rw *RWMutex) AcquireWrite(ctx context.Context) (*RWLock, error) {
	return rw.acquire(ctx, true)
}

func (rw *RWMutex) acquire(ctx context.Context, write bool) (*RWLock, error) {
	token := lease.NewToken()
	// Poll at least three times per lease so that a waiting writer's
	// marker never lapses between attempts.
	delay := func(n int) time.Duration { return min(rw.backoff.Delay(n), max(rw.ttl/3, time.Millisecond)) }
	h, waits, err := retry(ctx, rw.name, delay, func(ctx context.Context) (*RWLock, error) {
		return rw.try(ctx, write, token)
	})
	if err != nil {
		if write {
			// A writer that gives up takes back its waiting marker, whether
			// its time ran out while it slept or while an attempt was in
			// flight. If that cannot run, the marker expires after the
			// lease length.
			gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = writeGiveUpScript.Run(gctx, rw.rdb, []string{rw.waiting}, token).Err()
			cancel()
		}
		return nil, err
	}
	h.h.SetWaits(waits)
	return h, nil
}

// Release gives back this hold only: another reader's hold is untouched.
// It returns ErrNotHeld if the lease had expired.
func (h *RWLock) Release(ctx context.Context) error {
	var n int
	var err error
	if h.write {
		n, err = releaseScript.Run(ctx, h.rw.rdb, []string{h.rw.writer}, h.Token()).Int()
	} else {
		n, err = readReleaseScript.Run(ctx, h.rw.rdb, []string{h.rw.readers}, h.Token()).Int()
	}
	if err != nil {
		return fmt.Errorf("locking: release %s: %w", h.rw.name, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// Extend resets this hold's lease to ttl from now, or returns ErrNotHeld.
func (h *RWLock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	sent := ClockFrom(ctx).Now()
	var n int
	var err error
	if h.write {
		n, err = extendScript.Run(ctx, h.rw.rdb, []string{h.rw.writer}, h.Token(), ttl.Milliseconds()).Int()
	} else {
		n, err = readExtendScript.Run(ctx, h.rw.rdb, []string{h.rw.readers}, h.Token(), ttl.Milliseconds()).Int()
	}
	if err != nil {
		return fmt.Errorf("locking: extend %s: %w", h.rw.name, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	h.h.SetExpires(sent.Add(ttl))
	return nil
}
