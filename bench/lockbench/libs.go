// Package lockbench measures package locking against two peer Redis lock
// libraries, github.com/go-redsync/redsync/v4 and github.com/bsm/redislock,
// on one private redis-server in one run: uncontended acquire+release,
// one key contended by several goroutines (the acquire+release loop of
// "Redis in Action" chapter 11), allocations per operation, and the
// machine's ceiling measured with redis-benchmark.
//
// It lives in its own module so that the main module never depends on
// the peer libraries.
package lockbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/locking/queue"
)

// ErrGaveUp is returned by Worker.Acquire when the library stopped trying
// before the context ended (redsync after its tries, redislock after its
// retry strategy says stop). The benchmark loop then simply calls Acquire
// again, and the wait keeps running.
var ErrGaveUp = errors.New("lockbench: library gave up")

// Worker is one goroutine's handle on one lock key. It is not safe for
// concurrent use: each goroutine of a measurement gets its own.
type Worker interface {
	// Acquire blocks until the key is held, the library gives up
	// (ErrGaveUp), or ctx ends.
	Acquire(ctx context.Context) error
	// Release releases the hold taken by the last successful Acquire.
	Release(ctx context.Context) error
}

// Config is one library with one set of settings.
type Config struct {
	// Name labels the rows of the report, e.g. "redsync-tuned".
	Name string
	// Library is "locking", "redsync" or "redislock".
	Library string
	// Settings says, in words, how the library is configured.
	Settings string
	// newWorker returns a worker for key on the config's client.
	newWorker func(rdb *redis.Client, key string, ttl time.Duration, tries *atomic.Int64) Worker
	// countsTriesItself is set when the worker, not the command hook,
	// counts lock attempts (redislock sends its attempts as EVALSHA).
	countsTriesItself bool
}

// Ours reports whether the config is package locking.
func (c Config) Ours() bool { return c.Library == "locking" }

// Configs returns every configuration the benchmark compares, ours first.
// ttl is the lease of every hold (long enough never to expire in a run).
func Configs() []Config {
	return []Config{
		{
			Name: "locking", Library: "locking",
			Settings: "NewMutex(rdb, key, ttl), Acquire with DefaultBackoff (full-jitter exponential, 1-16 ms)",
			newWorker: func(rdb *redis.Client, key string, ttl time.Duration, _ *atomic.Int64) Worker {
				return &oursWorker{m: locking.NewMutex(rdb, key, ttl)}
			},
		},
		{
			Name: "locking-wakeups", Library: "locking",
			Settings: "NewMutex(rdb, key, ttl, WithWakeups()): Release publishes, the client's waiters share one subscription, each message wakes one of them; retry on the wake-up or after DefaultBackoff",
			newWorker: func(rdb *redis.Client, key string, ttl time.Duration, _ *atomic.Int64) Worker {
				return &oursWorker{m: locking.NewMutex(rdb, key, ttl, locking.WithWakeups())}
			},
		},
		{
			Name: "locking-queue", Library: "locking",
			Settings: "queue.NewMutex(rdb, key, ttl): waiters queue in Redis and block in BLPOP; Release hands the lock to the first waiter in its own script",
			newWorker: func(rdb *redis.Client, key string, ttl time.Duration, tries *atomic.Int64) Worker {
				return &queueWorker{m: queue.NewMutex(rdb, key, ttl), tries: tries}
			},
			countsTriesItself: true,
		},
		{
			Name: "redsync", Library: "redsync",
			Settings: "README: redsync.New(goredis.NewPool(rdb)).NewMutex(key), defaults (8 s expiry, 32 tries, 50-250 ms random delay)",
			newWorker: func(rdb *redis.Client, key string, _ time.Duration, _ *atomic.Int64) Worker {
				return &redsyncWorker{m: redsync.New(goredis.NewPool(rdb)).NewMutex(key)}
			},
		},
		{
			Name: "redsync-tuned", Library: "redsync",
			Settings: "WithExpiry(ttl), WithTries(MaxInt32), WithRetryDelayFunc(the same 1-16 ms jittered backoff as locking)",
			newWorker: func(rdb *redis.Client, key string, ttl time.Duration, _ *atomic.Int64) Worker {
				return &redsyncWorker{m: redsync.New(goredis.NewPool(rdb)).NewMutex(key,
					redsync.WithExpiry(ttl),
					redsync.WithTries(math.MaxInt32),
					redsync.WithRetryDelayFunc(func(i int) time.Duration { return locking.DefaultBackoff.Delay(i - 1) }),
				)}
			},
		},
		{
			Name: "redislock", Library: "redislock",
			Settings: "README example: Obtain(ctx, key, ttl, &Options{RetryStrategy: LimitRetry(LinearBackoff(100 ms), 3)})",
			newWorker: func(rdb *redis.Client, key string, ttl time.Duration, tries *atomic.Int64) Worker {
				return &redislockWorker{c: redislock.New(rdb), key: key, ttl: ttl, tries: tries, readme: true}
			},
			countsTriesItself: true,
		},
		{
			Name: "redislock-tuned", Library: "redislock",
			Settings: "RetryStrategy: the same 1-16 ms jittered backoff as locking, unlimited (bounded by ctx)",
			newWorker: func(rdb *redis.Client, key string, ttl time.Duration, tries *atomic.Int64) Worker {
				return &redislockWorker{c: redislock.New(rdb), key: key, ttl: ttl, tries: tries}
			},
			countsTriesItself: true,
		},
	}
}

// SelectConfigs returns the configs named in names (all when names is
// empty), in the order of Configs.
func SelectConfigs(names []string) ([]Config, error) {
	all := Configs()
	if len(names) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []Config
	for _, c := range all {
		if want[c.Name] {
			out = append(out, c)
			delete(want, c.Name)
		}
	}
	for n := range want {
		return nil, fmt.Errorf("lockbench: unknown config %q", n)
	}
	return out, nil
}

type oursWorker struct {
	m *locking.Mutex
	l *locking.Lock
}

func (w *oursWorker) Acquire(ctx context.Context) error {
	l, err := w.m.Acquire(ctx)
	if err != nil {
		return err
	}
	w.l = l
	return nil
}

func (w *oursWorker) Release(ctx context.Context) error { return w.l.Release(ctx) }

// queueWorker counts one try per acquisition: a queue.Mutex waiter asks
// once and is handed the lock, it never retries.
type queueWorker struct {
	m     *queue.Mutex
	l     *queue.Lock
	tries *atomic.Int64
}

func (w *queueWorker) Acquire(ctx context.Context) error {
	w.tries.Add(1)
	l, err := w.m.Acquire(ctx)
	if err != nil {
		return err
	}
	w.l = l
	return nil
}

func (w *queueWorker) Release(ctx context.Context) error { return w.l.Release(ctx) }

type redsyncWorker struct{ m *redsync.Mutex }

func (w *redsyncWorker) Acquire(ctx context.Context) error {
	err := w.m.LockContext(ctx)
	if errors.Is(err, redsync.ErrFailed) && ctx.Err() == nil {
		return fmt.Errorf("%w: %w", ErrGaveUp, err)
	}
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) && ctx.Err() == nil {
		return fmt.Errorf("%w: %w", ErrGaveUp, err)
	}
	return err
}

func (w *redsyncWorker) Release(ctx context.Context) error {
	ok, err := w.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock reported false")
	}
	return err
}

type redislockWorker struct {
	c      *redislock.Client
	key    string
	ttl    time.Duration
	tries  *atomic.Int64
	readme bool
	l      *redislock.Lock
	jitter jitterRetry
}

func (w *redislockWorker) Acquire(ctx context.Context) error {
	var rs redislock.RetryStrategy
	if w.readme {
		rs = countingRetry{redislock.LimitRetry(redislock.LinearBackoff(100*time.Millisecond), 3), w.tries}
	} else {
		w.jitter = jitterRetry{tries: w.tries}
		rs = &w.jitter
	}
	l, err := w.c.Obtain(ctx, w.key, w.ttl, &redislock.Options{RetryStrategy: rs})
	if err != nil {
		if errors.Is(err, redislock.ErrNotObtained) && ctx.Err() == nil {
			return fmt.Errorf("%w: %w", ErrGaveUp, err)
		}
		return err
	}
	w.tries.Add(1) // the successful attempt
	w.l = l
	return nil
}

func (w *redislockWorker) Release(ctx context.Context) error { return w.l.Release(ctx) }

// countingRetry counts failed attempts: redislock asks its strategy for a
// backoff once after every attempt that did not obtain the lock.
type countingRetry struct {
	s     redislock.RetryStrategy
	tries *atomic.Int64
}

func (c countingRetry) NextBackoff() time.Duration {
	c.tries.Add(1)
	return c.s.NextBackoff()
}

// jitterRetry is locking.DefaultBackoff as a redislock strategy, counting
// failed attempts.
type jitterRetry struct {
	n     int
	tries *atomic.Int64
}

func (j *jitterRetry) NextBackoff() time.Duration {
	j.tries.Add(1)
	d := locking.DefaultBackoff.Delay(j.n)
	j.n++
	return d
}
