// Package flawed holds the broken lock recipes that the articles behind
// this project walk through, each kept as a lesson. Every type's doc
// comment names the failure it has and the recipe that removes it. They
// exist for the gallery (go run ./cmd/simulate gallery), which injects the
// fault at each one's vulnerable point and shows the damage in the market,
// for the explorer (go run ./cmd/simulate explore), which finds each
// failure by searching the interleavings, for tests, and (BookTimeout) for the simulator's book client form, which
// reproduces the book's figures with the book's own lock. Do not use them
// to protect anything.
//
// The recipes whose failure lies between two of their own commands
// (GetThenSet, SetNXThenExpire, CompareThenDel, BookTimeout) take an
// optional Hook, called at that vulnerable point, so that a demonstration
// can interleave clients exactly there, or make a client "crash" there by
// returning an error. The others fail without a gap of their own and
// take none: SetNX when its holder stops before DEL, SetPXThenDel when
// its holder's lease runs out before DEL, SeedRWLock when a second reader
// releases.
package flawed

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/locking/attempt"
)

// The vulnerable points at which recipes call their Hook.
const (
	// AfterGet is between GetThenSet's GET (which saw no lock) and its SET.
	AfterGet = "after-get"
	// AfterSetNX is between SETNX and EXPIRE (SetNXThenExpire, BookTimeout).
	AfterSetNX = "after-setnx"
	// AfterCompare is between CompareThenDel's GET-and-compare and its DEL.
	AfterCompare = "after-compare"
)

// ErrCrashed is what a Hook returns to make its client stop at the point,
// as if the process had died there: the recipe returns at once, sending
// nothing more.
var ErrCrashed = errors.New("flawed: client crashed")

// Hook is called at a recipe's vulnerable point with the caller's context.
// A non-nil error stops the recipe there and is returned to its caller.
type Hook func(ctx context.Context, point string) error

func (h Hook) at(ctx context.Context, point string) error {
	if h == nil {
		return nil
	}
	return h(ctx, point)
}

// Lock is the common shape of the single-key recipes: TryAcquire makes one
// attempt and returns the holder's token, or locking.ErrNotAcquired;
// Release gives the lock back.
type Lock interface {
	TryAcquire(ctx context.Context) (token string, err error)
	Release(ctx context.Context, token string) error
}

// Waiter waits between attempts: locking.Backoff is one.
type Waiter interface {
	// Wait waits after failed attempt n (from 0), or returns ctx's error.
	Wait(ctx context.Context, n int) error
}

// Acquire retries l.TryAcquire, waiting with w after each refusal, until
// it succeeds or ctx ends; it returns the token and how many attempts
// failed first. It gives up as package locking's kinds do (attempt.Loop):
// an error other than a refusal ends it (marked locking.ErrNotAcquired
// when ctx had ended), and so does a wait that fails.
func Acquire(ctx context.Context, l Lock, w Waiter) (string, int, error) {
	token, waits, err := attempt.Loop(ctx, attempt.Retry{NotAcquired: locking.ErrNotAcquired, Wait: w.Wait},
		func(ctx context.Context, _ int) (string, error) { return l.TryAcquire(ctx) })
	if err != nil {
		return "", waits, err
	}
	return token, waits, nil
}

// GetThenSet is recipe 1: GET the key and, if it is empty, SET it.
//
// Failure: the check and the set are two commands. Two clients that both
// GET before either SETs both see an empty key and both "take" the lock.
// Fixed by SetNX (one atomic command), and properly by locking.Mutex.
type GetThenSet struct {
	RDB  redis.UniversalClient
	Key  string
	Hook Hook // called at AfterGet
}

// TryAcquire implements Lock.
func (l *GetThenSet) TryAcquire(ctx context.Context) (string, error) {
	err := l.RDB.Get(ctx, l.Key).Err()
	if err == nil {
		return "", locking.ErrNotAcquired
	}
	if !errors.Is(err, redis.Nil) {
		return "", err
	}
	if err := l.Hook.at(ctx, AfterGet); err != nil {
		return "", err
	}
	token := uuid.NewString()
	return token, l.RDB.Set(ctx, l.Key, token, 0).Err()
}

// Release deletes the key, whoever holds it.
func (l *GetThenSet) Release(ctx context.Context, _ string) error {
	return l.RDB.Del(ctx, l.Key).Err()
}

// SetNX is recipe 2: SETNX to take the lock, DEL to release it.
//
// Failure: the lock has no expiry. A holder that crashes (or loses its
// connection) before DEL leaves it held forever, and every later client
// waits in vain. Fixed by giving the lock a lease (SET NX PX).
type SetNX struct {
	RDB redis.UniversalClient
	Key string
}

// TryAcquire implements Lock.
func (l *SetNX) TryAcquire(ctx context.Context) (string, error) { return setNX(ctx, l.RDB, l.Key, 0) }

// setNX sets key to a fresh token, with a lease of ttl (0: none), if it
// does not exist, and returns the token; locking.ErrNotAcquired if it
// exists.
func setNX(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration) (string, error) {
	token := uuid.NewString()
	ok, err := rdb.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return "", err
	}
	if !ok {
		return "", locking.ErrNotAcquired
	}
	return token, nil
}

// Release deletes the key, whoever holds it.
func (l *SetNX) Release(ctx context.Context, _ string) error {
	return l.RDB.Del(ctx, l.Key).Err()
}

// SetNXThenExpire is recipe 3: SETNX, then EXPIRE as a second command.
//
// Failure: a crash between the two commands leaves a lock without expiry,
// which is recipe 2's deadlock again. Fixed by SET key value NX PX ttl,
// which sets both at once.
type SetNXThenExpire struct {
	RDB  redis.UniversalClient
	Key  string
	TTL  time.Duration
	Hook Hook // called at AfterSetNX
}

// TryAcquire implements Lock.
func (l *SetNXThenExpire) TryAcquire(ctx context.Context) (string, error) {
	token, err := setNX(ctx, l.RDB, l.Key, 0)
	if err != nil {
		return "", err
	}
	if err := l.Hook.at(ctx, AfterSetNX); err != nil {
		return "", err
	}
	return token, l.RDB.PExpire(ctx, l.Key, l.TTL).Err()
}

// Release deletes the key, whoever holds it.
func (l *SetNXThenExpire) Release(ctx context.Context, _ string) error {
	return l.RDB.Del(ctx, l.Key).Err()
}

// SetPXThenDel is recipe 4: SET key value NX PX ttl, released by a plain
// DEL.
//
// Failure: a holder whose lease expired while it worked (a long pause)
// still DELs the key at the end, and so releases the next holder's lock:
// a third client gets in beside the second. Fixed by a token checked on
// release (recipe 5, properly recipe 6).
type SetPXThenDel struct {
	RDB redis.UniversalClient
	Key string
	TTL time.Duration
}

// TryAcquire implements Lock.
func (l *SetPXThenDel) TryAcquire(ctx context.Context) (string, error) {
	return setNX(ctx, l.RDB, l.Key, l.TTL)
}

// Release deletes the key, whoever holds it.
func (l *SetPXThenDel) Release(ctx context.Context, _ string) error {
	return l.RDB.Del(ctx, l.Key).Err()
}

// CompareThenDel is recipe 5: a random token set with SET NX PX, released
// by GET, compare in the client, then DEL.
//
// Failure: the compare and the DEL are two commands. A holder paused
// between them (after seeing its own token) can wake up after its lease
// expired and another client took the lock, and DEL that client's lock.
// Fixed by comparing and deleting in one Lua script (locking.Mutex).
type CompareThenDel struct {
	RDB  redis.UniversalClient
	Key  string
	TTL  time.Duration
	Hook Hook // called at AfterCompare
}

// TryAcquire implements Lock.
func (l *CompareThenDel) TryAcquire(ctx context.Context) (string, error) {
	return setNX(ctx, l.RDB, l.Key, l.TTL)
}

// Release deletes the key if, when read, it held token.
func (l *CompareThenDel) Release(ctx context.Context, token string) error {
	v, err := l.RDB.Get(ctx, l.Key).Result()
	if errors.Is(err, redis.Nil) || (err == nil && v != token) {
		return locking.ErrNotHeld
	}
	if err != nil {
		return err
	}
	if err := l.Hook.at(ctx, AfterCompare); err != nil {
		return err
	}
	return l.RDB.Del(ctx, l.Key).Err()
}

// BookTimeout is recipe 11, Redis in Action's acquire_lock_with_timeout
// (section 6.2.5): SETNX a random identifier, then EXPIRE in whole
// seconds; a client that fails to acquire gives a lock found without a TTL
// one (the fix-up that heals a crash between SETNX and EXPIRE); release
// with WATCH, GET, MULTI, DEL, EXEC, only if the identifier still matches.
//
// What it gets right: a crash between SETNX and EXPIRE no longer deadlocks
// (the next waiter sets the expiry), and an expired holder cannot delete
// another's lock. What it cannot fix: a holder paused past its timeout
// still acts as the holder. It goes on to write while the next holder
// writes too; only fencing at the resource (market.WithFencing) refuses
// the late write.
type BookTimeout struct {
	RDB  redis.UniversalClient
	Key  string
	TTL  time.Duration // rounded up to whole seconds, as the book does
	Hook Hook          // called at AfterSetNX
}

func (l *BookTimeout) seconds() time.Duration {
	return time.Duration(math.Ceil(l.TTL.Seconds())) * time.Second
}

// TryAcquire implements Lock.
func (l *BookTimeout) TryAcquire(ctx context.Context) (string, error) {
	token, err := setNX(ctx, l.RDB, l.Key, 0)
	if err == nil {
		if err := l.Hook.at(ctx, AfterSetNX); err != nil {
			return "", err
		}
		return token, l.RDB.Expire(ctx, l.Key, l.seconds()).Err()
	}
	if !errors.Is(err, locking.ErrNotAcquired) {
		return "", err
	}
	if ttl, err := l.RDB.TTL(ctx, l.Key).Result(); err == nil && ttl == -1 {
		l.RDB.Expire(ctx, l.Key, l.seconds())
	}
	return "", locking.ErrNotAcquired
}

// Release deletes the lock if it still holds token, retrying when the key
// changes between the check and the delete; locking.ErrNotHeld otherwise.
func (l *BookTimeout) Release(ctx context.Context, token string) error {
	for {
		err := l.RDB.Watch(ctx, func(tx *redis.Tx) error {
			v, err := tx.Get(ctx, l.Key).Result()
			if errors.Is(err, redis.Nil) || (err == nil && v != token) {
				return locking.ErrNotHeld
			}
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Del(ctx, l.Key)
				return nil
			})
			return err
		}, l.Key)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
	}
}
