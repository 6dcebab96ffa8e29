package flawed

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
)

// SeedRWLock is recipe 9, the "cluster" read-write lock of the seed
// article: one hash per lock with fields "read" and "write", each holding
// the client's millisecond timestamp of its acquisition; a hold counts as
// expired once older than its timeout; a release deletes the field only if
// it still holds the releaser's timestamp.
//
// Failure: there is one "read" field for all readers. A second reader
// overwrites the first one's timestamp, and when it releases it deletes
// the field, though the first reader is still reading: a writer is then
// admitted while a read is in progress. (The write lock is not reentrant
// either, and holds depend on the clients' clocks agreeing.) Fixed by
// locking.RWMutex, where every reader has its own hold.
type SeedRWLock struct {
	RDB redis.UniversalClient
	Key string
	// KeyTTL is the PEXPIRE set on the hash at each acquisition; ReadTTL
	// and WriteTTL are the ages after which a read or write hold is stale.
	KeyTTL, ReadTTL, WriteTTL time.Duration
	// Now is the client's clock (time.Now when nil); tests and the gallery
	// give each client distinct instants.
	Now func() time.Time
}

var (
	seedReadScript = redis.NewScript(`
local lockKey,timeout,readExpTime,writeExpTime,currentTimeWs = KEYS[1],tonumber(ARGV[1]),tonumber(ARGV[2]),tonumber(ARGV[3]),tonumber(ARGV[4])
local writeValue = redis.call('HGET',lockKey,'write')
local canGet=false
if writeValue then
canGet=((currentTimeWs - tonumber(writeValue))> writeExpTime )
else canGet=true
end
if canGet then
redis.call('HSET',lockKey,'read',currentTimeWs)
redis.call('PEXPIRE',lockKey,timeout)
return 1
else
return 0
end`)
	seedWriteScript = redis.NewScript(`
local lockKey,timeout,readExpTime,writeExpTime,currentTimeWs = KEYS[1],tonumber(ARGV[1]),tonumber(ARGV[2]),tonumber(ARGV[3]),tonumber(ARGV[4])
local writeValue = redis.call('HGET',lockKey,'write')
local writeValid=false
if writeValue then
writeValid=((currentTimeWs - tonumber(writeValue))> writeExpTime )
else
writeValid=true
end
local readValue = redis.call('HGET',lockKey,'read')
local readValid=false
if readValue then
readValid=((currentTimeWs - tonumber(readValue))> readExpTime )
else
readValid=true
end
if writeValid and readValid then
redis.call('HSET',lockKey,'write',currentTimeWs)
redis.call('PEXPIRE',lockKey,timeout)
return 1
else
return 0
end`)
	seedDelReadScript = redis.NewScript(`
local lockKey,readTime = KEYS[1],ARGV[1]
local readValue = redis.call('HGET',lockKey,'read')
if readTime==readValue then
redis.call('HDEL',lockKey,'read')
end
return 0`)
	seedDelWriteScript = redis.NewScript(`
local lockKey,writeTime = KEYS[1],ARGV[1]
local writeValue = redis.call('HGET',lockKey,'write')
if writeTime==writeValue then
redis.call('HDEL',lockKey,'write')
end
return 0`)
)

func (l *SeedRWLock) now() string {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	return strconv.FormatInt(now().UnixMilli(), 10)
}

func (l *SeedRWLock) acquire(ctx context.Context, s *redis.Script) (string, error) {
	value := l.now()
	n, err := s.Run(ctx, l.RDB, []string{l.Key}, l.KeyTTL.Milliseconds(), l.ReadTTL.Milliseconds(), l.WriteTTL.Milliseconds(), value).Int()
	if err != nil {
		return "", err
	}
	if n != 1 {
		return "", locking.ErrNotAcquired
	}
	return value, nil
}

// TryAcquireRead takes a read hold and returns its timestamp, or
// locking.ErrNotAcquired while a fresh write hold exists.
func (l *SeedRWLock) TryAcquireRead(ctx context.Context) (string, error) {
	return l.acquire(ctx, seedReadScript)
}

// TryAcquireWrite takes the write hold and returns its timestamp, or
// locking.ErrNotAcquired while a fresh read or write hold exists.
func (l *SeedRWLock) TryAcquireWrite(ctx context.Context) (string, error) {
	return l.acquire(ctx, seedWriteScript)
}

// ReleaseRead deletes the "read" field if it still holds value.
func (l *SeedRWLock) ReleaseRead(ctx context.Context, value string) error {
	return seedDelReadScript.Run(ctx, l.RDB, []string{l.Key}, value).Err()
}

// ReleaseWrite deletes the "write" field if it still holds value.
func (l *SeedRWLock) ReleaseWrite(ctx context.Context, value string) error {
	return seedDelWriteScript.Run(ctx, l.RDB, []string{l.Key}, value).Err()
}
