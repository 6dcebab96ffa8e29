package explore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/flawed"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/locking"
)

// The faults a model may allow.
const (
	FaultPauseShort   = "pause-short"
	FaultPauseLong    = "pause-long"
	FaultPauseForever = "pause-forever"
	FaultCrash        = "crash"
)

// Model is the bounds of an exploration: what may happen in a schedule.
type Model struct {
	// Clients is how many clients run the workload (2 to 4; 0 for the
	// target's default).
	Clients int `json:"clients"`
	// Iterations is how many critical sections each client goes through.
	Iterations int `json:"iterations"`
	// Attempts is how many times a client tries to take the lock in one
	// iteration before it gives up; 0 for the default (Resolve).
	Attempts int `json:"attempts"`
	// Faults is the most faults in one schedule.
	Faults int `json:"faults"`
	// FaultKinds is which faults may happen.
	FaultKinds []string `json:"fault_kinds"`
	// TTL is the lease (of every client, unless TTLs says otherwise);
	// pauses are measured against it.
	TTL time.Duration `json:"-"`
	// TTLs, when set, is a lease per client, in order: client i's is
	// TTLs[i], and clients past the list take its last.
	TTLs []time.Duration `json:"-"`
	// RenewEvery, when set, makes each holder extend its hold every
	// RenewEvery of virtual time while it holds it, as a watchdog does
	// (instead of once in the critical section): a target with an
	// extension (a Lua or manifest recipe with extend, locking.Mutex).
	RenewEvery time.Duration `json:"-"`
	// Retry is a client's wait between attempts, in virtual time.
	Retry time.Duration `json:"-"`
	// Steps is the most commands one client may send in a schedule;
	// past it, the client stops where it is (as if paused for good).
	Steps int `json:"steps"`
	// Ticks is the most times the clock advances in one schedule (a
	// retry's wait, a pause's end, a watchdog's interval each take one).
	Ticks int `json:"ticks"`
	// MaxSteps cuts a schedule (a safety net; never reached by the
	// workloads' bounds).
	MaxSteps int `json:"max_steps"`
	// Jump is how far a node's clock jumps forward (FaultClockJump); 0
	// for the default, one lease (Resolve).
	Jump time.Duration `json:"-"`
	// MaxDelay, when set, bounds the network's delay in virtual time: a
	// command sent (parked by a client that is neither paused nor
	// crashed) runs before the clock passes MaxDelay after its sending,
	// as on a network whose delays are bounded. A pause before a command
	// is sent is a pause, not a delay: the bound counts from the pause's
	// end. 0, the default, bounds nothing: a command may land any time
	// later, as on an asynchronous network, where only fencing keeps a
	// write in flight from landing after the lease that allowed it.
	MaxDelay time.Duration `json:"-"`
}

// DefaultModel is the model of a target unless told otherwise: the target's
// number of clients (Target.Clients), one critical section each, two attempts
// (one with three clients or more: a client's first attempt can already come
// after any other step), at most one fault of any kind, a 10 s lease and a 10
// ms retry.
func DefaultModel() Model {
	return Model{Iterations: 1, Attempts: 0, Faults: 1, Ticks: 3, Steps: 10,
		FaultKinds: []string{FaultPauseShort, FaultPauseLong, FaultPauseForever, FaultCrash},
		TTL:        10 * time.Second, Retry: 10 * time.Millisecond, MaxSteps: 200}
}

// Resolve returns m with its defaults filled in.
func (m Model) Resolve() Model {
	m.Attempts = m.attempts()
	if m.Jump == 0 {
		m.Jump = m.TTL
	}
	return m
}

// attempts is Attempts, or its default for the number of clients.
func (m Model) attempts() int {
	if m.Attempts > 0 {
		return m.Attempts
	}
	if m.Clients >= 3 {
		return 1
	}
	return 2
}

// MaxTTL is the longest lease (and clock jump) a model may have: a
// schedule's virtual time, times Dilation, must fit a time.Duration.
const MaxTTL = 10 * time.Minute

// Validate checks the bounds.
func (m Model) Validate() error {
	switch {
	case m.Clients < 2 || m.Clients > 4:
		return fmt.Errorf("clients %d: must be 2 to 4", m.Clients)
	case m.Iterations < 1 || m.Iterations > 3:
		return fmt.Errorf("iterations %d: must be 1 to 3", m.Iterations)
	case m.Attempts < 0 || m.Attempts > 5:
		return fmt.Errorf("attempts %d: must be 1 to 5", m.Attempts)
	case m.Steps < 1 || m.Steps > 50:
		return fmt.Errorf("steps %d: must be 1 to 50", m.Steps)
	case m.Ticks < 0 || m.Ticks > 10:
		return fmt.Errorf("ticks %d: must be 0 to 10", m.Ticks)
	case m.Faults < 0 || m.Faults > 3:
		return fmt.Errorf("faults per schedule %d: must be 0 to 3", m.Faults)
	case m.TTL < time.Second:
		return fmt.Errorf(
			"ttl %v: must be at least 1s (the real time a schedule takes must be negligible "+
				"beside it)",
			m.TTL,
		)
	case m.TTL > MaxTTL:
		return fmt.Errorf(
			"ttl %v: must be at most %v (times Dilation, a schedule's time must fit a "+
				"time.Duration)",
			m.TTL,
			MaxTTL,
		)
	case m.TTL%time.Millisecond != 0:
		return fmt.Errorf("ttl %v: must be whole milliseconds", m.TTL)
	case m.Jump < 0 || m.Jump > MaxTTL || m.Jump%time.Millisecond != 0:
		return fmt.Errorf("clock jump %v: must be whole milliseconds, 0 to %v", m.Jump, MaxTTL)
	case len(m.TTLs) > 4:
		return fmt.Errorf("ttls: %d leases for at most 4 clients", len(m.TTLs))
	case m.RenewEvery < 0 || m.RenewEvery > MaxTTL || m.RenewEvery%time.Millisecond != 0:
		return fmt.Errorf(
			"renew every %v: must be whole milliseconds, 0 to %v", m.RenewEvery, MaxTTL,
		)
	}
	for _, d := range m.TTLs {
		if d < time.Second || d > MaxTTL || d%time.Millisecond != 0 {
			return fmt.Errorf("ttls: lease %v: must be 1s to %v, in whole milliseconds", d, MaxTTL)
		}
	}
	return nil
}

// leaseOf is client i's lease.
func (m Model) leaseOf(i int) time.Duration {
	if len(m.TTLs) == 0 {
		return m.TTL
	}
	return m.TTLs[min(i, len(m.TTLs)-1)]
}

// Target is code to explore: a lock recipe (or a market strategy) and
// the workload its clients run.
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

	// Setup, Client and Check make a target of Go code of your own (see
	// code.go): Client is what each client does, Setup (optional)
	// prepares each schedule's keys, Check (optional) checks them at its
	// end.
	Setup  func(ctx context.Context, rdb *redis.Client, ns Namespace) error
	Client func(ctx context.Context, c *Client) error
	Check  func(ctx context.Context, rdb *redis.Client, ns Namespace) error

	ns       string
	nodes    int      // independent servers (Redlock); 0: the one server
	nodeSet  *nodeSet // their clients, once an explorer has opened them
	rw       bool     // readers and a writer
	watchdog bool
	fenced   bool // the critical section's write is fenced (Lock.Held)
	extend   bool // extend once in the critical section
	newLock  func(rdb redis.UniversalClient, c *client, m Model, ns string) locker
	lockKeys func(ns string) []string
	// check runs the target's own sanity checks (Lua).
	check func(ctx context.Context, rdb redis.UniversalClient, ns string) error

	// recipeOps lists, for a recipe (a manifest or Lua scripts), its ops
	// with their ok as the manifest gives it; nil for any other target.
	recipeOps []opDesc
	// reentrant: each critical section takes the lock twice, nested, and
	// releases it twice.
	reentrant bool
	// liveness, when set, checks liveness at the end of a schedule
	// instead of checkEnd's look at the lock keys (a recipe's probe).
	liveness func(ctx context.Context, e *Explorer, w *world) ([]Violation, error)

	// For a workload of its own (the market): setup prepares each
	// schedule's state, run is one client's workload instead of work's,
	// and end checks the end of a schedule instead of checkEnd's.
	setup func(ctx context.Context, rdb redis.UniversalClient, ns string) error
	run   func(ctx context.Context, c *client, m Model) error
	end   func(ctx context.Context, e *Explorer, w *world) ([]Violation, error)
	// resource describes the protected resource as it stands, for a
	// workload of its own.
	resource func(ctx context.Context, rdb redis.UniversalClient, ns string) (string, error)
	// steadySleeps makes every sleep of a client last Model.Retry (the
	// market's lock waits are jittered).
	steadySleeps bool
	// inferHolds follows who holds the lock from the commands on lock
	// keys and their replies (world.inferHold), for a workload whose lock
	// is taken inside the code under test.
	inferHolds bool
	// alike declares the clients alike but for their names: they run
	// the same code, which reads no client's name or index but through
	// its tokens and a recipe's ${client} (symmetry.go).
	alike bool
}

// opDesc is one op of a recipe: its name and its ok as the manifest
// gives it.
type opDesc struct{ name, ok string }

// locker is one client's lock: attempts return a hold, or
// locking.ErrNotAcquired.
type locker interface {
	acquire(ctx context.Context, write bool) (held, error)
}

// held is a hold as the workload sees it.
type held interface {
	release(ctx context.Context) error
	// extend renews the lease; locking.ErrNotHeld when it is lost.
	extend(ctx context.Context) error
	// end is when the lease ends, on the virtual clock since the epoch;
	// -1 for never.
	end() time.Duration
}

// Keys of the generic workload, under the namespace.
const (
	lockName    = "lock:L"
	counterName = "counter"
	xName       = "x"
	yName       = "y"
)

func (t *Target) isLock(key string) bool {
	return strings.HasPrefix(key, t.ns+"lock:") || strings.HasPrefix(key, "{"+t.ns+"lock:")
}

// short is text with the namespace left out.
func (t *Target) short(s string) string {
	s = strings.ReplaceAll(s, "{"+t.ns, "{")
	return strings.ReplaceAll(s, t.ns, "")
}

// describe is a command's name and keys, for reading and to tell pending
// commands apart: no tokens, no values that change between runs.
func (t *Target) describe(cmds []redis.Cmder) string {
	var parts []string
	for _, c := range cmds {
		parts = append(parts, rediscmd.Describe(argStrings(c), t.short))
	}
	return strings.Join(parts, "; ")
}

// registerScript names a script of a target in the steps and timelines.
func registerScript(name string, s *redis.Script) { rediscmd.Register(name, s.Hash()) }

// work is what one client runs: Iterations times, take the lock
// (retrying after Retry of virtual time, Attempts times at most), do the
// critical section, release the lock.
func (t *Target) work(ctx context.Context, c *client, m Model) error {
	if t.run != nil {
		return t.run(ctx, c, m)
	}
	m.TTL = m.leaseOf(c.idx)
	lk := t.newLock(c.rdb, c, m, t.ns)
	clk := clock{c}
	write := !t.rw || c.idx == m.Clients-1
	for range m.Iterations {
		if err := clk.awaitStart(ctx); err != nil {
			return err
		}
		c.w.mu.Lock()
		c.wanted = true
		c.w.mu.Unlock()
		var h held
		for n := 0; ; n++ {
			var err error
			h, err = lk.acquire(ctx, write)
			if err == nil {
				break
			}
			if !errors.Is(err, locking.ErrNotAcquired) {
				return err
			}
			if n+1 >= m.attempts() {
				c.w.mu.Lock()
				c.gaveUp = true
				c.w.mu.Unlock()
				return nil
			}
			if err := clk.Sleep(ctx, c.w.dilate(m.Retry)); err != nil {
				return err
			}
		}
		c.w.mu.Lock()
		c.hold = &hold{write: write, end: h.end}
		c.got++
		c.w.mu.Unlock()
		inner, err := t.nest(ctx, lk, write)
		if err != nil {
			return err
		}
		work, stop := ctx, func() {}
		in := h
		if inner != nil {
			in = inner
		}
		if t.watchdog {
			if e, ok := h.(interface{ extender() locking.Extender }); ok {
				work, stop = locking.KeepAlive(ctx, e.extender(), c.w.dilate(m.TTL))
			}
		} else if m.RenewEvery > 0 {
			work, stop = renewEvery(ctx, clk, in, m.RenewEvery)
			if t.extend {
				in = renewedHold{in}
			}
		}
		err = t.critical(work, c, in, write)
		stop()
		if err != nil {
			return err
		}
		if inner != nil {
			if err := inner.release(ctx); err != nil && !errors.Is(err, locking.ErrNotHeld) {
				return err
			}
		}
		c.w.mu.Lock()
		c.endHold = true
		c.w.mu.Unlock()
		if err := h.release(ctx); err != nil && !errors.Is(err, locking.ErrNotHeld) {
			return err
		}
		c.w.mu.Lock()
		c.hold, c.endHold = nil, false
		c.w.mu.Unlock()
	}
	c.w.mu.Lock()
	c.done = true
	c.w.mu.Unlock()
	return nil
}

// critical is the critical section: for a lock, read the shared counter
// and write it back plus one (a lost update shows as a counter below the
// number of sections completed); for a read-write lock, a reader reads x
// and y, which the writer increments together, and finds them equal.
func (t *Target) critical(ctx context.Context, c *client, h held, write bool) error {
	rdb := c.rdb
	if t.rw {
		if write {
			if ctx.Err() != nil {
				return nil
			}
			_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, t.ns+xName)
				p.Incr(ctx, t.ns+yName)
				return nil
			})
			if err == nil {
				c.w.mu.Lock()
				c.completed++
				c.w.mu.Unlock()
			}
			return err
		}
		x, err := getInt(ctx, rdb, t.ns+xName)
		if err != nil {
			return err
		}
		y, err := getInt(ctx, rdb, t.ns+yName)
		if err != nil {
			return err
		}
		c.w.mu.Lock()
		c.completed++
		if x != y {
			c.w.torn = append(
				c.w.torn,
				fmt.Sprintf(
					"reader %s read x=%d and y=%d: a write landed between its reads", c.name, x, y,
				),
			)
		}
		c.w.mu.Unlock()
		return nil
	}
	if t.fenced {
		l := h.(interface{ lock() *locking.Lock }).lock()
		// Lock.Held's check, pipelined with the read: the write commits
		// only while the lock key still holds this hold's token.
		err := rdb.Watch(ctx, func(tx *redis.Tx) error {
			var own, cur *redis.StringCmd
			if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				own = p.Get(ctx, l.Key())
				cur = p.Get(ctx, t.ns+counterName)
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
				p.Set(ctx, t.ns+counterName, n+1, 0)
				return nil
			})
			return err
		}, l.Key())
		switch {
		case err == nil:
			c.w.mu.Lock()
			c.completed++
			c.w.mu.Unlock()
		case errors.Is(err, locking.ErrNotHeld), errors.Is(err, redis.TxFailedErr):
			// Refused: the write of a holder that lost the lock.
		default:
			return err
		}
		return nil
	}
	n, err := getInt(ctx, rdb, t.ns+counterName)
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
	if err := rdb.Set(ctx, t.ns+counterName, n+1, 0).Err(); err != nil {
		return err
	}
	c.w.mu.Lock()
	c.completed++
	c.w.mu.Unlock()
	return nil
}

func (t *Target) maybeExtend(ctx context.Context, h held) error {
	if !t.extend {
		return nil
	}
	return h.extend(ctx)
}

func getInt(ctx context.Context, rdb redis.UniversalClient, key string) (int64, error) {
	n, err := rdb.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// checkEnd checks the properties that are read at the end of a schedule.
func (t *Target) checkEnd(
	ctx context.Context, e *Explorer, w *world, now time.Duration,
) ([]Violation, error) {
	if t.end != nil {
		return t.end(ctx, e, w)
	}
	var out []Violation
	w.mu.Lock()
	completed := 0
	var torn []string
	for _, c := range w.clients {
		completed += c.completed
	}
	torn = append(torn, w.torn...)
	w.mu.Unlock()
	// resource
	if t.rw {
		if len(torn) > 0 {
			out = append(out, Violation{Property: Resource, Message: torn[0]})
		}
	} else {
		n, err := getInt(ctx, e.rdb, t.ns+counterName)
		if err != nil {
			return nil, err
		}
		if n != int64(completed) {
			out = append(out, Violation{Property: Resource, Message: fmt.Sprintf(
				"lost update: %d critical sections completed their write, the counter says "+
					"%d", completed, n)})
		}
	}
	// liveness
	if t.liveness != nil {
		vs, err := t.liveness(ctx, e, w)
		return append(out, vs...), err
	}
	for _, key := range t.lockKeys(t.ns) {
		ttl, err := e.rdb.PTTL(ctx, key).Result()
		if err != nil {
			return nil, err
		}
		if ttl != -1 {
			continue // no key (-2), or a lease that will run out
		}
		w.mu.Lock()
		heldByLive, waiting := false, ""
		for _, c := range w.clients {
			if c.crashed {
				continue
			}
			if c.hold != nil {
				heldByLive = true
			}
			if c.wanted && c.gaveUp && waiting == "" {
				waiting = c.name
			}
		}
		var dead []string
		for _, c := range w.clients {
			if c.crashed {
				dead = append(dead, c.name)
			}
		}
		w.mu.Unlock()
		if !heldByLive && waiting != "" {
			who := "nobody alive holds it"
			if len(dead) > 0 {
				who = strings.Join(dead, ", ") + " crashed"
			}
			out = append(out, Violation{Property: Liveness, Message: fmt.Sprintf(
				"%s has no expiry and %s; %s waited in vain (it would wait forever)", t.short(key),
				who, waiting,
			)})
			break
		}
	}
	return out, nil
}

// --- lock adapters ---

// flawedLocker adapts a recipe of package flawed; its lease is ttl
// (virtual) from the attempt (0: none).
type flawedLocker struct {
	l   flawed.Lock
	ttl time.Duration
	clk clock
}

type flawedHeld struct {
	fl    *flawedLocker
	token string
	start time.Duration
}

func (f *flawedLocker) acquire(ctx context.Context, _ bool) (held, error) {
	start := f.clk.now()
	token, err := f.l.TryAcquire(ctx)
	if err != nil {
		return nil, err
	}
	return &flawedHeld{fl: f, token: token, start: start}, nil
}

func (h *flawedHeld) release(ctx context.Context) error { return h.fl.l.Release(ctx, h.token) }
func (h *flawedHeld) extend(context.Context) error      { return nil }
func (h *flawedHeld) end() time.Duration {
	if h.fl.ttl <= 0 {
		return -1
	}
	return h.start + h.fl.ttl
}

// mutexLocker adapts locking.Mutex; ttl is the lease it was made with
// (dilated), for extensions.
type mutexLocker struct {
	m   *locking.Mutex
	clk clock
	ttl time.Duration
}

type mutexHeld struct {
	l   *locking.Lock
	clk clock
	ttl time.Duration // dilated
}

func (m *mutexLocker) acquire(ctx context.Context, _ bool) (held, error) {
	l, err := m.m.TryAcquire(ctx)
	if err != nil {
		return nil, err
	}
	return &mutexHeld{l: l, clk: m.clk, ttl: m.ttl}, nil
}

func (h *mutexHeld) release(ctx context.Context) error { return h.l.Release(ctx) }
func (h *mutexHeld) extend(ctx context.Context) error  { return h.l.Extend(ctx, h.ttl) }
func (h *mutexHeld) end() time.Duration                { return h.clk.c.w.since(h.l.Expires()) }
func (h *mutexHeld) extender() locking.Extender        { return h.l }
func (h *mutexHeld) lock() *locking.Lock               { return h.l }

// rwLocker adapts locking.RWMutex; ttl is dilated, as for mutexLocker.
type rwLocker struct {
	rw  *locking.RWMutex
	clk clock
	ttl time.Duration
}

type rwHeld struct {
	h   *locking.RWLock
	clk clock
	ttl time.Duration
}

func (r *rwLocker) acquire(ctx context.Context, write bool) (held, error) {
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
	return &rwHeld{h: h, clk: r.clk, ttl: r.ttl}, nil
}

func (h *rwHeld) release(ctx context.Context) error { return h.h.Release(ctx) }
func (h *rwHeld) extend(ctx context.Context) error  { return h.h.Extend(ctx, h.ttl) }
func (h *rwHeld) end() time.Duration                { return h.clk.c.w.since(h.h.Expires()) }

// seedRWLocker adapts flawed.SeedRWLock: a hold is stale once older than
// its timeout, by the clients' clocks; ttl is that timeout in virtual
// time (the lock's own are dilated).
type seedRWLocker struct {
	l   *flawed.SeedRWLock
	clk clock
	ttl time.Duration
}

type seedRWHeld struct {
	l     *flawed.SeedRWLock
	write bool
	value string
	start time.Duration
	ttl   time.Duration
}

func (s *seedRWLocker) acquire(ctx context.Context, write bool) (held, error) {
	start := s.clk.now()
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

func (h *seedRWHeld) release(ctx context.Context) error {
	if h.write {
		return h.l.ReleaseWrite(ctx, h.value)
	}
	return h.l.ReleaseRead(ctx, h.value)
}
func (h *seedRWHeld) extend(context.Context) error { return nil }
func (h *seedRWHeld) end() time.Duration           { return h.start + h.ttl }

// now is the virtual time since the epoch.
func (k clock) now() time.Duration {
	w := k.c.w
	id := goid()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.note(k.c, w.gnum(id), "now "+strconv.FormatInt(int64(w.now), 10))
	return w.now
}

// --- the targets ---

// Recipes lists the IDs of the recipes Recipe takes, in the catalogue's
// order; the slice is the caller's.
func Recipes() []string { return flawed.RecipeIDs() }

func lockKey(ns string) string { return ns + lockName }

// nsPattern matches every key of namespace ns: those that begin with it,
// and those that name one of its keys inside a longer string (a recipe's
// "lock-signal:${lock}" or "{${lock}}:rwlock_timeout"). Its leases follow
// the virtual clock, and each schedule starts without them.
func nsPattern(ns string) string { return "*" + strings.Trim(ns, "{}:") + "*" }

func oneLockKey(ns string) []string { return []string{lockKey(ns)} }

// Recipe returns gallery recipe n (1, 2, 3, 4, 5, 6, 9 or 11), or its fix.
// The fix of 1 to 5 is locking.Mutex; of 6 and 11, locking.Mutex whose
// critical section's write is fenced (it commits only while the lock key
// holds the writer's token, Lock.Held); of 9, locking.RWMutex.
func Recipe(n string, fixed bool) (*Target, error) {
	if _, err := flawed.RecipeByID(n); err != nil {
		return nil, fmt.Errorf("unknown recipe %q (known: %s)", n, strings.Join(Recipes(), ", "))
	}
	if fixed {
		return recipeFix(n)
	}
	flawedTarget := func(
		about, property string,
		mk func(rdb redis.UniversalClient, key string, ttl time.Duration) flawed.Lock, leased bool,
	) *Target {
		return &Target{
			Name:     "recipe " + n,
			About:    about,
			Property: property,
			Clients:  2,
			Checks:   lockChecks,
			alike:    true,
			newLock: func(rdb redis.UniversalClient, c *client, m Model, ns string) locker {
				ttl := time.Duration(0)
				if leased {
					ttl = m.TTL
				}
				return &flawedLocker{
					l:   mk(rdb, lockKey(ns), c.w.dilate(m.TTL)),
					ttl: ttl,
					clk: clock{c},
				}
			},
			lockKeys: oneLockKey,
		}
	}
	switch n {
	case "1":
		return flawedTarget("GET, then SET if empty (flawed.GetThenSet)", MutualExclusion,
			func(rdb redis.UniversalClient, key string, _ time.Duration) flawed.Lock {
				return &flawed.GetThenSet{RDB: rdb, Key: key}
			}, false), nil
	case "2":
		return flawedTarget("SETNX, released by DEL, no expiry (flawed.SetNX)", Liveness,
			func(rdb redis.UniversalClient, key string, _ time.Duration) flawed.Lock {
				return &flawed.SetNX{RDB: rdb, Key: key}
			}, false), nil
	case "3":
		t := flawedTarget("SETNX, then EXPIRE (flawed.SetNXThenExpire)", Liveness,
			func(rdb redis.UniversalClient, key string, ttl time.Duration) flawed.Lock {
				return &flawed.SetNXThenExpire{RDB: rdb, Key: key, TTL: ttl}
			}, true)
		return t, nil
	case "4":
		t := flawedTarget(
			"SET NX PX, released by a plain DEL (flawed.SetPXThenDel)",
			MutualExclusion,
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
			MutualExclusion,
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
			Resource, false,
		)
		t.Checks = Properties()
		return t, nil
	case "9":
		return &Target{
			Name:     "recipe 9",
			About:    "the seed article's read-write lock (flawed.SeedRWLock)",
			Property: MutualExclusion,
			Clients:  3,
			rw:       true,
			Checks:   lockChecks,
			newLock: func(rdb redis.UniversalClient, c *client, m Model, ns string) locker {
				clk := clock{c}
				ttl := c.w.dilate(m.TTL)
				return &seedRWLocker{
					clk: clk,
					ttl: m.TTL,
					l: &flawed.SeedRWLock{RDB: rdb, Key: lockKey(ns),
						KeyTTL: ttl, ReadTTL: ttl, WriteTTL: ttl, Now: clk.Now},
				}
			},
			lockKeys: oneLockKey,
		}, nil
	case "11":
		t := flawedTarget("Redis in Action's lock with timeout (flawed.BookTimeout)", Resource,
			func(rdb redis.UniversalClient, key string, ttl time.Duration) flawed.Lock {
				return &flawed.BookTimeout{RDB: rdb, Key: key, TTL: ttl}
			}, true)
		t.Checks = Properties()
		return t, nil
	}
	return nil, fmt.Errorf("recipe %s of the catalogue has no target", n)
}

func recipeFix(n string) (*Target, error) {
	flawedT, err := Recipe(n, false)
	if err != nil {
		return nil, err
	}
	var t *Target
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
		t = &Target{
			Name:     "recipe 9 fixed",
			About:    "locking.RWMutex (one hold per reader)",
			Property: MutualExclusion,
			rw:       true,
			newLock: func(rdb redis.UniversalClient, c *client, m Model, ns string) locker {
				ttl := c.w.dilate(m.TTL)
				return &rwLocker{
					rw:  locking.NewRWMutex(rdb, ns+"lock:RW", ttl),
					clk: clock{c},
					ttl: ttl,
				}
			},
			lockKeys: func(ns string) []string {
				rw := locking.NewRWMutex(nil, ns+"lock:RW", time.Second)
				r, w, q := rw.Keys()
				return []string{r, w, q}
			},
		}
	}
	t.Clients = flawedT.Clients
	t.Checks = flawedT.Checks
	return t, nil
}

// lockChecks is what a lock alone must keep: mutual exclusion and
// liveness.
var lockChecks = []string{MutualExclusion, Liveness}

// recipeChecks is what a lock given as a recipe (a manifest, Lua scripts)
// must keep: a lock's properties, and those judged by its replies and
// its lease, which its scripts and ops say.
var recipeChecks = []string{MutualExclusion, Liveness, Ownership, Lease}

func mutexTarget(name, about, property string, fenced bool) *Target {
	return &Target{
		Name:     name,
		About:    about,
		Property: property,
		Clients:  2,
		fenced:   fenced,
		Checks:   Properties(),
		alike:    true,
		newLock: func(rdb redis.UniversalClient, c *client, m Model, ns string) locker {
			ttl := c.w.dilate(m.TTL)
			return &mutexLocker{m: locking.NewMutex(rdb, lockKey(ns), ttl), clk: clock{c}, ttl: ttl}
		},
		lockKeys: oneLockKey,
	}
}

// Watchdog returns locking.Mutex whose holds are renewed by a watchdog
// (locking.KeepAlive, every ttl/3, with its drift allowance). Without
// fencing it holds under pauses shorter than the lease less the renewal
// interval and drift, on a network whose delays are bounded below that
// too (Model.MaxDelay), and breaks the resource under longer ones: a
// write sent while the lease ran can land after it ended. With fencing,
// the critical section's write commits only while the lock key still
// holds the writer's token (Lock.Held under WATCH), as locking.KeepAlive's
// documentation asks, and a late write is refused.
func Watchdog(fencing bool) *Target {
	name, about := "watchdog", "locking.Mutex renewed by locking.KeepAlive, no fencing"
	if fencing {
		name, about = "watchdog fenced", "locking.Mutex renewed by locking.KeepAlive, the write "+
			"fenced (it commits "+
			"only while the lock key holds the writer's token: Lock.Held under WATCH)"
	}
	t := mutexTarget(name, about, Resource, fencing)
	t.watchdog = true
	return t
}
