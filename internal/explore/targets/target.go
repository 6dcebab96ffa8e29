package targets

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/flawed"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/redis/go-redis/v9"
)

// --- lock adapters ---

// flawedLocker adapts a recipe of package flawed for client c; its lease
// is ttl (virtual) from the attempt (0: none).
type flawedLocker struct {
	l   flawed.Lock
	ttl time.Duration
	c   *sched.Client
}

type flawedHeld struct {
	fl    *flawedLocker
	token string
	start time.Duration
}

func (f *flawedLocker) Acquire(ctx context.Context, _ bool) (sched.Held, error) {
	start := f.c.Elapsed()
	token, err := f.l.TryAcquire(ctx)
	if err != nil {
		return nil, err
	}
	return &flawedHeld{fl: f, token: token, start: start}, nil
}

func (h *flawedHeld) Release(ctx context.Context) error { return h.fl.l.Release(ctx, h.token) }

func (h *flawedHeld) Extend(context.Context) error { return nil }

func (h *flawedHeld) End() time.Duration {
	if h.fl.ttl <= 0 {
		return -1
	}
	return h.start + h.fl.ttl
}

// mutexLocker adapts locking.Mutex for client c; ttl is the lease it was
// made with (dilated), for extensions.
type mutexLocker struct {
	m   *locking.Mutex
	c   *sched.Client
	ttl time.Duration
}

type mutexHeld struct {
	l   *locking.Lock
	c   *sched.Client
	ttl time.Duration // dilated
}

func (m *mutexLocker) Acquire(ctx context.Context, _ bool) (sched.Held, error) {
	l, err := m.m.TryAcquire(ctx)
	if err != nil {
		return nil, err
	}
	return &mutexHeld{l: l, c: m.c, ttl: m.ttl}, nil
}

func (h *mutexHeld) Release(ctx context.Context) error { return h.l.Release(ctx) }

func (h *mutexHeld) Extend(ctx context.Context) error { return h.l.Extend(ctx, h.ttl) }

func (h *mutexHeld) End() time.Duration { return h.c.Since(h.l.Expires()) }

func (h *mutexHeld) Extender() locking.Extender { return h.l }

func (h *mutexHeld) Lock() *locking.Lock { return h.l }

// rwLocker adapts locking.RWMutex; ttl is dilated, as for mutexLocker.
type rwLocker struct {
	rw  *locking.RWMutex
	c   *sched.Client
	ttl time.Duration
}

type rwHeld struct {
	h   *locking.RWLock
	c   *sched.Client
	ttl time.Duration
}

func (r *rwLocker) Acquire(ctx context.Context, write bool) (sched.Held, error) {
	var h *locking.RWLock
	var err error
	if write {
		h, err = r.rw.TryAcquireWrite(ctx)
	} else {
		h, err = r.rw.TryAcquireRead(ctx)
	}
	if err != nil {
		return nil, err
	}
	return &rwHeld{h: h, c: r.c, ttl: r.ttl}, nil
}

func (h *rwHeld) Release(ctx context.Context) error { return h.h.Release(ctx) }

func (h *rwHeld) Extend(ctx context.Context) error { return h.h.Extend(ctx, h.ttl) }

func (h *rwHeld) End() time.Duration { return h.c.Since(h.h.Expires()) }

// seedRWLocker adapts flawed.SeedRWLock: a hold is stale once older than
// its timeout, by the clients' clocks; ttl is that timeout in virtual
// time (the lock's own are dilated).
type seedRWLocker struct {
	l   *flawed.SeedRWLock
	c   *sched.Client
	ttl time.Duration
}

type seedRWHeld struct {
	l     *flawed.SeedRWLock
	write bool
	value string
	start time.Duration
	ttl   time.Duration
}

func (s *seedRWLocker) Acquire(ctx context.Context, write bool) (sched.Held, error) {
	start := s.c.Elapsed()
	var v string
	var err error
	ttl := s.ttl
	if write {
		v, err = s.l.TryAcquireWrite(ctx)
	} else {
		v, err = s.l.TryAcquireRead(ctx)
	}
	if err != nil {
		return nil, err
	}
	return &seedRWHeld{l: s.l, write: write, value: v, start: start, ttl: ttl}, nil
}

func (h *seedRWHeld) Release(ctx context.Context) error {
	if h.write {
		return h.l.ReleaseWrite(ctx, h.value)
	}
	return h.l.ReleaseRead(ctx, h.value)
}

func (h *seedRWHeld) Extend(context.Context) error { return nil }

func (h *seedRWHeld) End() time.Duration { return h.start + h.ttl }

// --- the targets ---

// Recipes lists the IDs of the recipes Recipe takes, in the catalogue's
// order; the slice is the caller's.
func Recipes() []string { return flawed.RecipeIDs() }

// Recipe returns gallery recipe n (1, 2, 3, 4, 5, 6, 9 or 11), or its fix.
// The fix of 1 to 5 is locking.Mutex; of 6 and 11, locking.Mutex whose
// critical section's write is fenced (it commits only while the lock key
// holds the writer's token, Lock.Held); of 9, locking.RWMutex.
func Recipe(n string, fixed bool) (*sched.Target, error) {
	if _, err := flawed.RecipeByID(n); err != nil {
		return nil, fmt.Errorf("unknown recipe %q (known: %s)", n, strings.Join(Recipes(), ", "))
	}
	if fixed {
		return recipeFix(n)
	}
	flawedTarget := func(
		about, property string,
		mk func(rdb redis.UniversalClient, key string, ttl time.Duration) flawed.Lock, leased bool,
	) *sched.Target {
		return &sched.Target{
			Name:     "recipe " + n,
			About:    about,
			Property: property,
			Clients:  2,
			Checks:   lockChecks,
			Traits:   sched.Traits{Alike: true},
			Lock: &sched.Lock{
				New: func(c *sched.Client) sched.Locker {
					ttl := time.Duration(0)
					if leased {
						ttl = c.Model().TTL
					}
					return &flawedLocker{
						l:   mk(c.Redis(), sched.LockKey(c.Prefix()), c.Lease()),
						ttl: ttl,
						c:   c,
					}
				},
				Keys: sched.SingleLockKey,
			},
		}
	}
	switch n {
	case "1":
		return flawedTarget("GET, then SET if empty (flawed.GetThenSet)", result.MutualExclusion,
			func(rdb redis.UniversalClient, key string, _ time.Duration) flawed.Lock {
				return &flawed.GetThenSet{RDB: rdb, Key: key}
			}, false), nil
	case "2":
		return flawedTarget("SETNX, released by DEL, no expiry (flawed.SetNX)", result.Liveness,
			func(rdb redis.UniversalClient, key string, _ time.Duration) flawed.Lock {
				return &flawed.SetNX{RDB: rdb, Key: key}
			}, false), nil
	case "3":
		t := flawedTarget("SETNX, then EXPIRE (flawed.SetNXThenExpire)", result.Liveness,
			func(rdb redis.UniversalClient, key string, ttl time.Duration) flawed.Lock {
				return &flawed.SetNXThenExpire{RDB: rdb, Key: key, TTL: ttl}
			}, true)
		return t, nil
	case "4":
		t := flawedTarget(
			"SET NX PX, released by a plain DEL (flawed.SetPXThenDel)",
			result.MutualExclusion,
			func(rdb redis.UniversalClient, key string, ttl time.Duration) flawed.Lock {
				return &flawed.SetPXThenDel{RDB: rdb, Key: key, TTL: ttl}
			},
			true,
		)
		t.Clients = 3
		return t, nil
	case "5":
		t := flawedTarget(
			"SET NX PX, released by GET, compare, DEL (flawed.CompareThenDel)",
			result.MutualExclusion,
			func(rdb redis.UniversalClient, key string, ttl time.Duration) flawed.Lock {
				return &flawed.CompareThenDel{RDB: rdb, Key: key, TTL: ttl}
			},
			true,
		)
		t.Clients = 3
		return t, nil
	case "6":
		t := mutexTarget(
			"recipe 6",
			"SET NX PX with a token, released by a token script (locking.Mutex), no fencing",
			result.Resource, false,
		)
		t.Checks = allLockChecks()
		return t, nil
	case "9":
		return &sched.Target{
			Name:     "recipe 9",
			About:    "the seed article's read-write lock (flawed.SeedRWLock)",
			Property: result.MutualExclusion,
			Clients:  3,
			Checks:   lockChecks,
			Lock: &sched.Lock{
				New: func(c *sched.Client) sched.Locker {
					ttl := c.Lease()
					return &seedRWLocker{
						c:   c,
						ttl: c.Model().TTL,
						l: &flawed.SeedRWLock{RDB: c.Redis(), Key: sched.LockKey(c.Prefix()),
							KeyTTL: ttl, ReadTTL: ttl, WriteTTL: ttl, Now: c.Now},
					}
				},
				Keys:      sched.SingleLockKey,
				ReadWrite: true,
			},
		}, nil
	case "11":
		t := flawedTarget(
			"Redis in Action's lock with timeout (flawed.BookTimeout)", result.Resource,
			func(rdb redis.UniversalClient, key string, ttl time.Duration) flawed.Lock {
				return &flawed.BookTimeout{RDB: rdb, Key: key, TTL: ttl}
			}, true)
		t.Checks = allLockChecks()
		return t, nil
	}
	return nil, fmt.Errorf("recipe %s of the catalogue has no target", n)
}

func recipeFix(n string) (*sched.Target, error) {
	flawedT, err := Recipe(n, false)
	if err != nil {
		return nil, err
	}
	var t *sched.Target
	switch n {
	case "1", "2", "3", "4", "5":
		t = mutexTarget(
			"recipe "+n+" fixed", "locking.Mutex (SET NX PX with a token, token-checked release)",
			flawedT.Property, false,
		)
	case "6", "11":
		t = mutexTarget(
			"recipe "+n+" fixed",
			"locking.Mutex, the write fenced (it commits only while the lock key holds the "+
				"writer's token: Lock.Held under WATCH)",
			flawedT.Property,
			true,
		)
	case "9":
		t = &sched.Target{
			Name:     "recipe 9 fixed",
			About:    "locking.RWMutex (one hold per reader)",
			Property: result.MutualExclusion,
			Lock: &sched.Lock{
				New: func(c *sched.Client) sched.Locker {
					ttl := c.Lease()
					return &rwLocker{
						rw:  locking.NewRWMutex(c.Redis(), c.Key("lock:RW"), ttl),
						c:   c,
						ttl: ttl,
					}
				},
				Keys: func(ns string) []string {
					rw := locking.NewRWMutex(nil, ns+"lock:RW", time.Second)
					r, w, q := rw.Keys()
					return []string{r, w, q}
				},
				ReadWrite: true,
			},
		}
	}
	t.Clients = flawedT.Clients
	t.Checks = flawedT.Checks
	return t, nil
}

// lockChecks is what a lock alone must keep: mutual exclusion and
// liveness.
var lockChecks = []string{result.MutualExclusion, result.Liveness}

// allLockChecks is every property a lock that is not a semaphore checks.
func allLockChecks() []string {
	return slices.DeleteFunc(
		result.Properties(), func(p string) bool { return p == result.Holders },
	)
}

// recipeChecks is what a lock given as a recipe (a manifest, Lua scripts)
// must keep: a lock's properties, and those judged by its replies and
// its lease, which its scripts and ops say.
var recipeChecks = []string{result.MutualExclusion, result.Liveness, result.Ownership, result.Lease}

func mutexTarget(name, about, property string, fenced bool) *sched.Target {
	return &sched.Target{
		Name:     name,
		About:    about,
		Property: property,
		Clients:  2,
		Checks:   result.Properties(),
		Traits:   sched.Traits{Alike: true},
		Lock: &sched.Lock{
			New: func(c *sched.Client) sched.Locker {
				ttl := c.Lease()
				return &mutexLocker{
					m:   locking.NewMutex(c.Redis(), sched.LockKey(c.Prefix()), ttl),
					c:   c,
					ttl: ttl,
				}
			},
			Keys:   sched.SingleLockKey,
			Fenced: fenced,
		},
	}
}

// Watchdog returns locking.Mutex whose holds are renewed by a watchdog
// (locking.KeepAlive, every ttl/3, with its drift allowance). Without
// fencing it holds under pauses shorter than the lease less the renewal
// interval and drift, on a network whose delays are bounded below that
// too (action.Model.MaxDelay), and breaks the resource under longer ones: a
// write sent while the lease ran can land after it ended. With fencing,
// the critical section's write commits only while the lock key still
// holds the writer's token (Lock.Held under WATCH), as locking.KeepAlive's
// documentation asks, and a late write is refused.
func Watchdog(fencing bool) *sched.Target {
	name, about := "watchdog", "locking.Mutex renewed by locking.KeepAlive, no fencing"
	if fencing {
		name, about = "watchdog fenced", "locking.Mutex renewed by locking.KeepAlive, the write "+
			"fenced (it commits "+
			"only while the lock key holds the writer's token: Lock.Held under WATCH)"
	}
	t := mutexTarget(name, about, result.Resource, fencing)
	t.Lock.Watchdog = true
	return t
}
