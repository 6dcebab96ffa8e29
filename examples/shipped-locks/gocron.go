package shipped

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/explore"
)

// errNotLocked is what jobLocker.Lock returns when redsync did not get
// the lock: gocron then skips the run.
var errNotLocked = errors.New("job lock not obtained")

// jobLocker is a gocron.Locker on redsync, as gocron's distributed
// locking asks for one: Lock takes a redsync mutex named after the job
// (LockContext, with the options given), the scheduler runs the job and
// then calls Unlock. With extend > 0, a goroutine on a time.Ticker
// extends the mutex every extend until the unlock. ended is called once
// a run of the job is over, skipped (the lock not obtained) or done
// (its unlock sent), so that the client knows its tick has passed.
type jobLocker struct {
	rs      *redsync.Redsync
	opts    []redsync.Option
	extend  time.Duration
	extends *atomic.Int64 // successful extensions, over every schedule
	ended   func()
}

// Lock takes the job's mutex, or returns errNotLocked.
func (l *jobLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	m := l.rs.NewMutex(key, l.opts...)
	if err := m.LockContext(ctx); err != nil {
		l.ended()
		return nil, fmt.Errorf("%w: %w", errNotLocked, err)
	}
	jl := &jobLock{m: m, ended: l.ended, stop: make(chan struct{}), done: make(chan struct{})}
	if l.extend <= 0 {
		close(jl.done)
		return jl, nil
	}
	go func() {
		defer close(jl.done)
		tick := time.NewTicker(l.extend)
		defer tick.Stop()
		for {
			select {
			case <-jl.stop:
				return
			case <-tick.C:
			}
			if ok, err := m.ExtendContext(ctx); err != nil || !ok {
				return
			}
			l.extends.Add(1)
		}
	}()
	return jl, nil
}

// jobLock is a held job mutex.
type jobLock struct {
	m          *redsync.Mutex
	ended      func()
	stop, done chan struct{}
}

// Unlock stops the extensions and releases the mutex.
func (jl *jobLock) Unlock(ctx context.Context) error {
	defer jl.ended()
	close(jl.stop)
	<-jl.done
	ok, err := jl.m.UnlockContext(ctx)
	if err == nil && !ok {
		return errNotLocked
	}
	return err
}

// GocronSetup is how Gocron sets up each instance.
type GocronSetup struct {
	// Runner, when set, is the scheduler option that says how jobs run:
	// WithLimitConcurrentJobs runs them on runner goroutines that live
	// as long as the scheduler. Unset, gocron starts each run from a
	// goroutine that has ended by then: it descends from no client the
	// explorer can trace, and the search is refused (ErrOutside).
	Runner gocron.SchedulerOption
	// Extend extends the job's mutex every third of its lease while the
	// job runs (the auto-extension gocron-redis-lock offers); Extends
	// counts the extensions, over every schedule.
	Extend  bool
	Extends *atomic.Int64
	// Check is the target's Check: onePerTick or lostUpdate.
	Check func(context.Context, *redis.Client, explore.Namespace) error
}

// Gocron is go-co-op/gocron v2 on each client, as its distributed
// locking is set up: a scheduler with a jobLocker on redsync with one
// try (as gocron-redis-lock's README passes WithTries(1)) and the
// explorer's lease as the mutex's expiry, and one job, named by the same
// key in every instance, due once at the same virtual time (the next
// whole lease). The job counts its run and does the unfenced work,
// believing it holds the lock from the moment it starts until it
// returns.
func Gocron(name string, setup GocronSetup) *explore.Target {
	return &explore.Target{
		Name:    name,
		Clients: 2,
		Client: func(ctx context.Context, c *explore.Client) error {
			return runScheduler(ctx, c, setup)
		},
		Check: setup.Check,
	}
}

// onePerTick is a job locker's promise: one run of a job per tick,
// whatever the number of instances.
func onePerTick(ctx context.Context, rdb *redis.Client, ns explore.Namespace) error {
	runs, err := rdb.Get(ctx, ns.Key("runs")).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if runs > 1 {
		return fmt.Errorf("one tick of the job ran %d times", runs)
	}
	return nil
}

// runScheduler runs one instance: it starts the scheduler, waits for
// its tick to pass (or the schedule to end), and shuts it down.
func runScheduler(ctx context.Context, c *explore.Client, setup GocronSetup) error {
	passed := make(chan struct{}, 1)
	opts := []redsync.Option{redsync.WithExpiry(c.Lease()), redsync.WithTries(1)}
	locker := &jobLocker{rs: redsync.New(goredis.NewPool(c.Redis())), opts: opts,
		extends: setup.Extends, ended: func() { passed <- struct{}{} }}
	if setup.Extend {
		locker.extend = c.Lease() / 3
	}
	sopts := []gocron.SchedulerOption{gocron.WithDistributedLocker(locker),
		gocron.WithStopTimeout(3 * c.Lease())}
	if setup.Runner != nil {
		sopts = append(sopts, setup.Runner)
	}
	s, err := gocron.NewScheduler(sopts...)
	if err != nil {
		return err
	}
	var jobErr atomic.Pointer[error]
	due := time.Now().Truncate(c.Lease()).Add(c.Lease())
	_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartDateTime(due)),
		gocron.NewTask(func(ctx context.Context) {
			c.Holding(c.Lease())
			err := c.Redis().Incr(ctx, c.Key("runs")).Err()
			if err == nil {
				err = work(ctx, c)
			}
			c.Released()
			if err != nil {
				jobErr.Store(&err)
			}
		}), gocron.WithName(c.Key("lock:job")), gocron.WithContext(ctx))
	if err != nil {
		return err
	}
	s.Start()
	select {
	case <-passed:
	case <-ctx.Done():
	}
	if err := s.Shutdown(); err != nil && ctx.Err() == nil {
		return err
	}
	if p := jobErr.Load(); p != nil && ctx.Err() == nil {
		return *p
	}
	return nil
}
