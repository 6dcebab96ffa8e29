// Package lock is a lock on one Redis key written as many published Go
// lock libraries are: its methods take no context, and send every command
// with context.Background() inside. Lock tries a number of times and
// sleeps on the wall clock between tries; Unlock compares the token and
// deletes the key in one script. The lease is not fenced: a holder that
// stalls past it writes after another has taken the lock.
package lock

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// ErrNotObtained is returned by Lock when every try found the lock taken.
var ErrNotObtained = errors.New("lock: not obtained")

// ErrNotHeld is returned by Unlock when the key no longer holds the
// hold's token.
var ErrNotHeld = errors.New("lock: not held")

// Locker takes locks on keys of one Redis.
type Locker struct {
	rdb   *redis.Client
	tries int
	wait  time.Duration
}

// New returns a locker that tries each lock tries times (at least once),
// sleeping wait between two tries.
func New(rdb *redis.Client, tries int, wait time.Duration) *Locker {
	return &Locker{rdb: rdb, tries: max(tries, 1), wait: wait}
}

// Lock is a hold of a lock.
type Lock struct {
	l     *Locker
	key   string
	token string
}

// Lock takes the lock on key for ttl, trying as the locker was told.
func (l *Locker) Lock(key string, ttl time.Duration) (*Lock, error) {
	token := uuid.NewString()
	for try := 0; ; try++ {
		ok, err := l.rdb.SetNX(context.Background(), key, token, ttl).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return &Lock{l: l, key: key, token: token}, nil
		}
		if try+1 >= l.tries {
			return nil, ErrNotObtained
		}
		time.Sleep(l.wait)
	}
}

var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0`)

// Unlock releases the hold, if the key still holds its token.
func (h *Lock) Unlock() error {
	n, err := unlockScript.Run(context.Background(), h.l.rdb, []string{h.key}, h.token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
