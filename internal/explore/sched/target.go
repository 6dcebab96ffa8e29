package sched

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/goroutine"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/redis/go-redis/v9"
)

// Target is code to explore: clients that run a workload under the
// scheduler, and what is checked of them. Its workload is its own when
// Workload.Run is set, or else the generic one, whose clients take Lock
// around a critical section. Either way each client runs on its handle (Client), and the checks
// at a schedule's end read the runtime's record as a Snapshot.
type Target struct {
	// Name identifies the target ("recipe 4", "recipe 4 fixed", "lua").
	Name string
	// About says what it is.
	About string
	// Property is the property the target is known to break, or its fix
	// to keep; empty when unknown (a user's script).
	Property string
	// Clients is the default number of clients.
	Clients int
	// Checks is the properties checked unless told otherwise: those the
	// target's lesson is about. A lease lock without fencing cannot keep
	// the resource under a pause past its lease (recipe 6's lesson), so
	// the resource is checked only where fencing or its absence is the
	// point.
	Checks []string
	// Lock, for the generic workload, is the lock its clients take.
	Lock *Lock
	// Workload, when its Run is set, is a workload of the target's own.
	Workload Workload
	// Traits is what the target says of its clients that the explorer
	// relies on to read them and to cut its search.
	Traits Traits

	// ns is the namespace, the prefix of every key of the target: set on
	// an explorer's copy (Explorer.Prefix).
	ns string
	// nodes is the clients of the lock's nodes (Lock.Nodes), once an
	// explorer has opened them.
	nodes *nodeSet
}

// Lock is the lock a target's clients take in the generic workload: each
// client, Iterations times, takes it (retrying after the model's Retry,
// Attempts times at most), runs the critical section, and releases it.
// The critical section reads the counter and writes it back plus one
// (lost updates break Resource); a read-write lock's writer increments x
// and y together, and its readers find them equal.
type Lock struct {
	// New makes one client's lock on its handle: its go-redis client,
	// its lease (Client.Lease), its clock, its nodes.
	New func(c *Client) Locker
	// Keys is the lock's keys in namespace ns: where Liveness looks for
	// a key without expiry, unless the lock has a probe of its own.
	Keys func(ns string) []string
	// Check, when set, checks the lock before a search: a recipe's
	// scripts load, its commands exist (on the scheduler's connection).
	Check func(ctx context.Context, rdb redis.UniversalClient, ns string) error
	// Liveness, when set, checks liveness at the end of a schedule
	// instead of the look at Keys: a recipe's probe.
	Liveness func(ctx context.Context, e *Explorer, s Snapshot) ([]result.Violation, error)
	// Ops lists, for a recipe (a manifest or Lua scripts), its ops with
	// their ok as the manifest gives it; nil for any other lock.
	Ops []OpDesc
	// Nodes is the number of independent servers the lock runs on
	// (Redlock: Client.Nodes); 0 for the one server.
	Nodes int

	// ReadWrite: readers and a writer (Target.Writes).
	ReadWrite bool
	// Reentrant: each critical section takes the lock twice, nested,
	// and releases it twice.
	Reentrant bool
	// Permits, above 0, makes the lock a semaphore of that many permits:
	// Holders (at most Permits clients hold at once) is checked instead
	// of MutualExclusion.
	Permits int

	// Watchdog renews the hold in the background while the critical
	// section runs (locking.KeepAlive).
	Watchdog bool
	// Fenced makes the critical section's write commit only while the
	// lock key holds the hold's token (Lock.Held under WATCH).
	Fenced bool
	// Extend makes the critical section extend its hold once, between
	// its read and its write.
	Extend bool
}

// Workload is a workload of a target's own (the market, Go code): what
// each client runs, how each schedule's state is prepared, and how its
// end is checked.
type Workload struct {
	// Run is one client's workload. It calls Client.Begin at the start
	// of each critical section; the client is done when it returns nil.
	Run func(ctx context.Context, c *Client) error
	// Prepare, when set, prepares each schedule's state in namespace ns.
	Prepare func(ctx context.Context, rdb redis.UniversalClient, ns string) error
	// PrepareOnce says that Prepare does nothing but write keys of the
	// namespace, the same ones every time: it runs before the first
	// schedule only, and the keys it wrote are restored (DUMP, RESTORE)
	// before every other, in the one round trip that resets the
	// namespace.
	PrepareOnce bool
	// End, when set, checks the end of a schedule: it reads the server
	// through the explorer's connection and the runtime's record as s.
	End func(ctx context.Context, e *Explorer, s Snapshot) ([]result.Violation, error)
	// Resource, when set, describes the protected resource as it stands.
	Resource func(ctx context.Context, rdb redis.UniversalClient, ns string) (string, error)
}

// Traits is what a target says of its clients, which the explorer relies
// on. The zero value says nothing: clients that may differ, whose holds
// the lock's Locker tells.
type Traits struct {
	// Alike declares the clients alike but for their names: they run
	// the same code, which reads no client's name or index but through
	// its tokens and a recipe's ${client} (symmetry.go).
	Alike bool
	// SteadySleeps makes every sleep of a client last Model.Retry (the
	// market's lock waits are jittered).
	SteadySleeps bool
	// InferHolds follows who holds the lock from the commands on lock
	// keys and their replies (world.inferHold), for a workload whose lock
	// is taken inside the code under test.
	InferHolds bool
	// declared is set by Code: the clients say what they hold themselves
	// (Client.Holding, Client.Released).
	declared bool
}

// OpDesc is one op of a recipe: its name and its ok as the manifest
// gives it.
type OpDesc struct{ Name, OK string }

// Locker is one client's lock: attempts return a hold, or
// locking.ErrNotAcquired.
type Locker interface {
	Acquire(ctx context.Context, write bool) (Held, error)
}

// Quitter is a Locker that does something when its client stops waiting
// for the lock: a recipe's give_up op, a release by a client that holds
// nothing. The workload calls GiveUp once its last attempt was refused;
// the client has given up (clientState.gaveUp) once it returns.
type Quitter interface {
	GiveUp(ctx context.Context, write bool) error
}

// Held is a hold as the workload sees it.
type Held interface {
	Release(ctx context.Context) error
	// Extend renews the lease; locking.ErrNotHeld when it is lost.
	Extend(ctx context.Context) error
	// End is when the lease ends, on the virtual clock since the epoch;
	// -1 for never.
	End() time.Duration
}

// Keys of the generic workload, under the namespace: the counter a lock's
// critical section increments, and the pair x and y a read-write lock's
// writer increments together and its readers find equal.
const (
	lockName      = "lock:L"
	CounterKey    = "counter"
	ReadWriteKeyX = "x"
	ReadWriteKeyY = "y"
)

// IsLock reports whether key is a lock key of the target's namespace
// ("lock:...", braced or not).
func (t *Target) IsLock(key string) bool {
	return strings.HasPrefix(key, t.ns+"lock:") || strings.HasPrefix(key, "{"+t.ns+"lock:")
}

// Short is text with the namespace left out.
func (t *Target) Short(s string) string {
	s = strings.ReplaceAll(s, "{"+t.ns, "{")
	return strings.ReplaceAll(s, t.ns, "")
}

// describe is a command's name and keys, for reading and to tell pending
// commands apart: no tokens, no values that change between runs.
func (t *Target) describe(cmds []redis.Cmder) string {
	return t.describeArgs(plumbing.Args(cmds))
}

// describeArgs is describe of the commands' arguments as plumbing.Args
// writes them.
func (t *Target) describeArgs(args [][]string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = rediscmd.Describe(a, t.Short)
	}
	return strings.Join(parts, "; ")
}

// RegisterScript names a script of a target in the steps and timelines.
func RegisterScript(name string, s *redis.Script) { rediscmd.Register(name, s.Hash()) }

// Writes reports whether client i of a schedule of the given number of
// clients takes the lock to write: every client of a mutex; of a
// read-write lock (ReadWrite), the last one only, the others to read.
func (t *Target) Writes(i, clients int) bool { return !t.lock().ReadWrite || i == clients-1 }

// noLock is the Lock of a target with a workload of its own: a mutex on
// one server, whose fields say nothing.
var noLock Lock

// lock is the target's Lock, or noLock for a workload of its own.
func (t *Target) lock() *Lock {
	if t.Lock == nil {
		return &noLock
	}
	return t.Lock
}

// work is what one client runs: Iterations times, take the lock
// (retrying after Retry of virtual time, Attempts times at most), do the
// critical section, release the lock.
func (t *Target) work(ctx context.Context, c *clientState, m action.Model) error {
	if t.Workload.Run != nil {
		err := t.Workload.Run(ctx, &Client{c: c, m: m})
		c.world.mu.Lock()
		if err == nil && !c.gaveUp {
			c.done = true
		}
		c.world.mu.Unlock()
		return err
	}
	m.TTL = m.LeaseOf(c.Index)
	lk := t.Lock.New(&Client{c: c, m: m})
	clk := Clock{c}
	write := t.Writes(c.Index, m.Clients)
	for range m.Iterations {
		if err := clk.AwaitStart(ctx); err != nil {
			return err
		}
		c.world.mu.Lock()
		c.wanted = true
		c.world.mu.Unlock()
		var h Held
		for n := 0; ; n++ {
			var err error
			h, err = lk.Acquire(ctx, write)
			if err == nil {
				break
			}
			if !errors.Is(err, locking.ErrNotAcquired) {
				return err
			}
			if n+1 >= m.Tries() {
				if q, ok := lk.(Quitter); ok {
					if err := q.GiveUp(ctx, write); err != nil {
						return err
					}
				}
				c.world.mu.Lock()
				c.gaveUp = true
				c.world.mu.Unlock()
				return nil
			}
			if err := clk.Sleep(ctx, c.world.Dilate(m.Retry)); err != nil {
				return err
			}
		}
		c.world.mu.Lock()
		c.holding = &hold{Write: write, End: h.End, held: h}
		c.got++
		c.world.mu.Unlock()
		inner, err := t.nest(ctx, lk, write)
		if err != nil {
			return err
		}
		work, stop := ctx, func() {}
		in := h
		if inner != nil {
			in = inner
		}
		if t.Lock.Watchdog {
			if e, ok := h.(interface{ Extender() locking.Extender }); ok {
				work, stop = locking.KeepAlive(ctx, e.Extender(), c.world.Dilate(m.TTL))
			}
		} else if m.RenewEvery > 0 {
			work, stop = renewEvery(ctx, clk, in, m.RenewEvery)
			if t.Lock.Extend {
				in = renewedHold{in}
			}
		}
		err = t.critical(work, c, in, write)
		stop()
		if err != nil {
			return err
		}
		if inner != nil {
			if err := inner.Release(ctx); err != nil && !errors.Is(err, locking.ErrNotHeld) {
				return err
			}
		}
		c.world.mu.Lock()
		c.endHold = true
		c.world.mu.Unlock()
		if err := h.Release(ctx); err != nil && !errors.Is(err, locking.ErrNotHeld) {
			return err
		}
		c.world.mu.Lock()
		c.holding, c.endHold = nil, false
		c.world.mu.Unlock()
	}
	c.world.mu.Lock()
	c.done = true
	c.world.mu.Unlock()
	return nil
}

// critical is the critical section: for a lock, read the shared counter
// and write it back plus one (a lost update shows as a counter below the
// number of sections completed); for a read-write lock, a reader reads x
// and y, which the writer increments together, and finds them equal.
func (t *Target) critical(ctx context.Context, c *clientState, h Held, write bool) error {
	rdb, ns := c.Redis, t.ns
	if t.Lock.ReadWrite {
		if write {
			if ctx.Err() != nil {
				return nil
			}
			_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, ns+ReadWriteKeyX)
				p.Incr(ctx, ns+ReadWriteKeyY)
				return nil
			})
			if err == nil {
				c.world.mu.Lock()
				c.completed++
				c.world.mu.Unlock()
			}
			return err
		}
		x, err := getInt(ctx, rdb, ns+ReadWriteKeyX)
		if err != nil {
			return err
		}
		y, err := getInt(ctx, rdb, ns+ReadWriteKeyY)
		if err != nil {
			return err
		}
		c.world.mu.Lock()
		c.completed++
		if x != y {
			c.world.torn = append(
				c.world.torn,
				fmt.Sprintf(
					"reader %s read x=%d and y=%d: a write landed between its reads", c.Name, x, y,
				),
			)
		}
		c.world.mu.Unlock()
		return nil
	}
	if t.Lock.Fenced {
		l := h.(interface{ Lock() *locking.Lock }).Lock()
		// Lock.Held's check, pipelined with the read: the write commits
		// only while the lock key still holds this hold's token.
		err := rdb.Watch(ctx, func(tx *redis.Tx) error {
			var own, cur *redis.StringCmd
			if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				own = p.Get(ctx, l.Key())
				cur = p.Get(ctx, ns+CounterKey)
				return nil
			}); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if v, err := own.Result(); err != nil || v != l.Token() {
				return locking.ErrNotHeld
			}
			n, _ := cur.Int64()
			if err := t.maybeExtend(ctx, h); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, ns+CounterKey, n+1, 0)
				return nil
			})
			return err
		}, l.Key())
		switch {
		case err == nil:
			c.world.mu.Lock()
			c.completed++
			c.world.mu.Unlock()
		case errors.Is(err, locking.ErrNotHeld), errors.Is(err, redis.TxFailedErr):
			// Refused: the write of a holder that lost the lock.
		default:
			return err
		}
		return nil
	}
	n, err := getInt(ctx, rdb, ns+CounterKey)
	if err != nil {
		return err
	}
	if err := t.maybeExtend(ctx, h); err != nil {
		if errors.Is(err, locking.ErrNotHeld) {
			return nil // the client learns it lost the lock, and stops
		}
		return err
	}
	if ctx.Err() != nil {
		return nil // the watchdog found the lock lost
	}
	if err := rdb.Set(ctx, ns+CounterKey, n+1, 0).Err(); err != nil {
		return err
	}
	c.world.mu.Lock()
	c.completed++
	c.world.mu.Unlock()
	return nil
}

func (t *Target) maybeExtend(ctx context.Context, h Held) error {
	if !t.Lock.Extend {
		return nil
	}
	return h.Extend(ctx)
}

// ErrUnreadable is returned when a key of the workload (the counter, or
// a read-write lock's x and y) holds what the explorer cannot read as the
// integer its critical sections write: code under test wrote it. The
// message names the key and shows the value bounded.
var ErrUnreadable = errors.New("explore: a key of the workload holds what the explorer cannot read")

// getInt reads key as an integer, 0 when there is none.
func getInt(ctx context.Context, rdb redis.UniversalClient, key string) (int64, error) {
	v, err := rdb.Get(ctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, nil
	case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
		return 0, fmt.Errorf("%w: %s holds another type than a string; the explorer wants an "+
			"integer there (its critical sections write it), or no key", ErrUnreadable, key)
	case err != nil:
		return 0, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return 0, fmt.Errorf("%w: %s holds %q; the explorer wants an integer there (its critical "+
			"sections write it), or no key", ErrUnreadable, key, rediscmd.Bound(v, 64))
	}
	return n, nil
}

// checkEnd checks the properties that are read at the end of a schedule.
func (t *Target) checkEnd(ctx context.Context, e *Explorer, w *world) ([]result.Violation, error) {
	snap := w.Snapshot()
	if t.Workload.End != nil {
		return t.Workload.End(ctx, e, snap)
	}
	var out []result.Violation
	completed := 0
	for _, c := range snap.Clients {
		completed += c.Completed
	}
	// resource
	if t.lock().ReadWrite {
		w.mu.Lock()
		torn := slices.Clone(w.torn)
		w.mu.Unlock()
		if len(torn) > 0 {
			out = append(out, result.Violation{Property: result.Resource, Message: torn[0]})
		}
	} else {
		n, err := getInt(ctx, e.Redis, t.ns+CounterKey)
		if err != nil {
			return nil, err
		}
		if n != int64(completed) {
			out = append(out, result.Violation{Property: result.Resource, Message: fmt.Sprintf(
				"lost update: %d critical sections completed their write, the counter says "+
					"%d", completed, n)})
		}
	}
	// liveness
	if l := t.lock(); l.Liveness != nil {
		vs, err := l.Liveness(ctx, e, snap)
		return append(out, vs...), err
	}
	v, err := t.noExpiry(ctx, e, snap)
	if v != nil {
		out = append(out, *v)
	}
	return out, err
}

// noExpiry is the liveness violation of a lock key with no expiry that no
// live client holds while a live client gave up waiting for it, if any.
func (t *Target) noExpiry(ctx context.Context, e *Explorer, snap Snapshot) (*result.Violation, error) {
	if t.lock().Keys == nil {
		return nil, nil
	}
	heldByLive, waiting := false, ""
	var dead []string
	for _, c := range snap.Clients {
		if c.Crashed {
			dead = append(dead, c.Name)
			continue
		}
		heldByLive = heldByLive || c.Hold != nil
		if c.Wanted && c.GaveUp && waiting == "" {
			waiting = c.Name
		}
	}
	for _, key := range t.Lock.Keys(t.ns) {
		ttl, err := e.Redis.PTTL(ctx, key).Result()
		if err != nil {
			return nil, err
		}
		if ttl != -1 {
			continue // no key (-2), or a lease that will run out
		}
		if !heldByLive && waiting != "" {
			who := "nobody alive holds it"
			if len(dead) > 0 {
				who = strings.Join(dead, ", ") + " crashed"
			}
			return &result.Violation{Property: result.Liveness, Message: fmt.Sprintf(
				"%s has no expiry and %s; %s waited in vain (it would wait forever)", t.Short(key),
				who, waiting,
			)}, nil
		}
	}
	return nil, nil
}

// Elapsed is the virtual time since the epoch.
func (k Clock) Elapsed() time.Duration {
	w := k.c.world
	id := goroutine.WhoAmI()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.note(k.c, w.gnum(id), "now "+strconv.FormatInt(int64(w.Now), 10))
	return w.Now
}

// LockKey is the key of the generic workload's lock in namespace ns.
func LockKey(ns string) string { return ns + lockName }

// NamespacePattern matches every key of namespace ns: those that begin with it,
// and those that name one of its keys inside a longer string (a recipe's
// "lock-signal:${lock}" or "{${lock}}:rwlock_timeout"). Its leases follow
// the virtual clock, and each schedule starts without them.
func NamespacePattern(ns string) string { return "*" + strings.Trim(ns, "{}:") + "*" }

// SingleLockKey is a Lock.Keys for a lock whose one key is
// LockKey(ns).
func SingleLockKey(ns string) []string { return []string{LockKey(ns)} }

// Nodes is the number of independent servers the target's lock runs on;
// 0 for the one server.
func (t *Target) Nodes() int { return t.lock().Nodes }
