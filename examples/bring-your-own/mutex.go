// Package mutex is a lock on one Redis key, as an application might write
// it, with a bug in its release that the explorer finds: Mutex.Unlock
// reads the key, then deletes it if it holds its token, in two round
// trips, and between the two the lock may have passed to another owner.
// FixedMutex deletes in one script.
package mutex

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// ErrNotHeld is returned by Unlock when the lock is not, or no longer,
// the caller's.
var ErrNotHeld = errors.New("mutex: not held")

// Mutex is a lock on one key, taken with SET NX PX and a token of its
// owner's.
type Mutex struct {
	rdb *redis.Client
	key string
	ttl time.Duration
}

// New returns a mutex on key whose holds last ttl unless released.
func New(rdb *redis.Client, key string, ttl time.Duration) *Mutex {
	return &Mutex{rdb: rdb, key: key, ttl: ttl}
}

// TryLock takes the lock if it is free and returns the hold's token; ok
// is false when another owner holds it.
func (m *Mutex) TryLock(ctx context.Context) (token string, ok bool, err error) {
	token = uuid.NewString()
	ok, err = m.rdb.SetNX(ctx, m.key, token, m.ttl).Result()
	if err != nil || !ok {
		return "", false, err
	}
	return token, true, nil
}

// Unlock releases the hold token names: it reads the key and, if it still
// holds token, deletes it. The check and the delete are two round trips:
// if the hold's lease runs out between them and another owner takes the
// lock, the DEL deletes the other owner's lock.
func (m *Mutex) Unlock(ctx context.Context, token string) error {
	v, err := m.rdb.Get(ctx, m.key).Result()
	if errors.Is(err, redis.Nil) || err == nil && v != token {
		return ErrNotHeld
	}
	if err != nil {
		return err
	}
	return m.rdb.Del(ctx, m.key).Err()
}

// FixedMutex is Mutex whose Unlock compares and deletes in one script,
// which nothing can come between.
type FixedMutex struct{ Mutex }

// NewFixed returns a fixed mutex on key whose holds last ttl unless
// released.
func NewFixed(rdb *redis.Client, key string, ttl time.Duration) *FixedMutex {
	return &FixedMutex{Mutex{rdb: rdb, key: key, ttl: ttl}}
}

var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0`)

// Unlock releases the hold token names, if the key still holds token.
func (m *FixedMutex) Unlock(ctx context.Context, token string) error {
	n, err := unlockScript.Run(ctx, m.rdb, []string{m.key}, token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
