package gallery

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/pausedholder"
	"github.com/lockmarket/lockmarket/internal/flawed"
	"github.com/lockmarket/lockmarket/internal/timeline"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// Scenarios returns the gallery, one scenario per recipe of
// flawed.RecipeIDs, in their order: the fault injected, its consequence,
// and the recipe that fixes it.
func Scenarios() []Scenario {
	return []Scenario{
		{byID("1"), "buyer A paused between its GET (empty) and its SET while buyer B takes the lock", "both buyers hold the listing's lock: the item is sold twice", "6 SET NX PX + token script (locking.Mutex)", runGetThenSet},
		{byID("2"), "the holder crashes before its DEL", "lock held forever: every later purchase is blocked", "6 locking.Mutex (the lease runs out)", crashedHolder(setNX)},
		{byID("3"), "the holder crashes between SETNX and EXPIRE", "lock left without expiry: every later purchase is blocked", "6 locking.Mutex (SET NX PX: no gap)", crashedHolder(setNXThenExpire)},
		{byID("4"), "holder A paused past its lease, then DELs the key while B holds it", "a third buyer is admitted beside B: an item is sold twice", "6 locking.Mutex (release only with the holder's token)", staleRelease(false)},
		{byID("5"), "holder A paused between its compare and its DEL, past its lease", "A's DEL frees B's lock: a third buyer is admitted, an item is sold twice", "6 locking.Mutex (compare and DEL in one script)", staleRelease(true)},
		{byID("6"), "holder A paused past its lease before its commit; B takes the lock and buys", "A still commits after B: the item is sold twice", "6 + fencing (market.WithFencing: the commit WATCHes the lock key)", leaseExpiry(nil)},
		{byID("9"), "two readers; the second releases while the first still reads", "a writer commits inside a read: the reader sees money that does not add up", "locking.RWMutex (one hold per reader)", runSeedRW},
		{byID("11"), "holder A paused past its timeout before its commit; B takes the lock and buys", "A still commits after B: the item is sold twice", "11 + fencing (market.WithFencing)", leaseExpiry(bookTimeout)},
	}
}

// byID is the recipe of the catalogue whose ID is id; the gallery names
// only recipes the catalogue has (TestScenariosFollowTheCatalogue).
func byID(id string) flawed.Recipe {
	r, err := flawed.RecipeByID(id)
	if err != nil {
		panic(err)
	}
	return r
}

// ScenarioOf returns the scenario of recipe id (a flawed.Recipe's ID); an
// error wrapping flawed.ErrUnknownRecipe when the gallery has none.
func ScenarioOf(id string) (Scenario, error) {
	for _, s := range Scenarios() {
		if s.Recipe.ID == id {
			return s, nil
		}
	}
	_, err := flawed.RecipeByID(id)
	if err == nil {
		err = fmt.Errorf("%w: the gallery has no scenario for recipe %s", flawed.ErrUnknownRecipe, id)
	}
	return Scenario{}, err
}

// newLock makes a flawed recipe's lock on key for the scenarios of
// several recipes; h, if the recipe takes one, is its Hook.
type newLock func(rdb redis.UniversalClient, key string, ttl time.Duration, h flawed.Hook) flawed.Lock

// runFunc runs one scenario once, with the flawed recipe or its fix.
type runFunc func(ctx context.Context, w *world, fixed bool) (outcome, error)

// crashedHolder is runCrashedHolder with the recipe nl.
func crashedHolder(nl newLock) runFunc {
	return func(ctx context.Context, w *world, fixed bool) (outcome, error) {
		return runCrashedHolder(ctx, w, fixed, nl)
	}
}

// staleRelease is runStaleRelease, paused in the release when inRelease.
func staleRelease(inRelease bool) runFunc {
	return func(ctx context.Context, w *world, fixed bool) (outcome, error) {
		return runStaleRelease(ctx, w, fixed, inRelease)
	}
}

// leaseExpiry is runLeaseExpiry with the recipe nl (nil: locking.Mutex).
func leaseExpiry(nl newLock) runFunc {
	return func(ctx context.Context, w *world, fixed bool) (outcome, error) {
		return runLeaseExpiry(ctx, w, fixed, nl)
	}
}

func setNX(rdb redis.UniversalClient, key string, _ time.Duration, _ flawed.Hook) flawed.Lock {
	return &flawed.SetNX{RDB: rdb, Key: key}
}

func setNXThenExpire(rdb redis.UniversalClient, key string, ttl time.Duration, h flawed.Hook) flawed.Lock {
	return &flawed.SetNXThenExpire{RDB: rdb, Key: key, TTL: ttl, Hook: h}
}

func bookTimeout(rdb redis.UniversalClient, key string, ttl time.Duration, h flawed.Hook) flawed.Lock {
	return &flawed.BookTimeout{RDB: rdb, Key: key, TTL: ttl, Hook: h}
}

// hookErrs collects errors from inside hooks, which cannot return them.
type hookErrs struct {
	mu   sync.Mutex
	errs []error
}

func (h *hookErrs) add(err error) {
	if err != nil {
		h.mu.Lock()
		h.errs = append(h.errs, err)
		h.mu.Unlock()
	}
}

func (h *hookErrs) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return errors.Join(h.errs...)
}

// expected reports whether a purchase error is one the market gives in
// normal operation (the scenario's outcome), rather than a failure of the
// demonstration itself.
func expected(err error) bool {
	return err == nil || errors.Is(err, market.ErrContended) || errors.Is(err, market.ErrListingNotFound) ||
		errors.Is(err, locking.ErrLockLost) || errors.Is(err, flawed.ErrCrashed)
}

// Lanes of the scenarios.
const (
	laneA = "A ann"
	laneB = "B bob"
	laneC = "C cat"
	laneD = "D dan"
)

// runGetThenSet: buyers A and B of one listing, fine-grained locks. A
// stops at the gap between GET and SET until B has reached its commit
// (flawed: B got the lock too) or given up (fixed: the lock was taken).
// The correct mutex has no such gap, so there A stops at its commit.
func runGetThenSet(ctx context.Context, w *world, fixed bool) (outcome, error) {
	var o outcome
	if err := w.users(ctx, map[string]int64{"sam": 0, "ann": 1000, "bob": 1000}); err != nil {
		return o, err
	}
	if err := w.list(ctx, "sam", map[string]int64{"relic": 100}); err != nil {
		return o, err
	}
	w.rec.Lanes(laneA, laneB)
	var errs hookErrs
	aAtGap, bAtGap := newEvent(), newEvent()
	var aDone *event
	waitB := func(ctx context.Context, why string) {
		resume := w.pause(ctx, "%s", why)
		aAtGap.fire()
		errs.add(bAtGap.wait(ctx))
		resume()
	}
	waitA := func(ctx context.Context) {
		resume := w.pause(ctx, "waits at its commit until A is done")
		bAtGap.fire()
		errs.add(aDone.wait(ctx))
		resume()
	}
	var mA, mB trader
	var errA, errB error
	if fixed {
		mA, errA = w.market(patient)
		mB, errB = w.market(impatient)
		mA = mA.stoppingAt(func(ctx context.Context, _, _ string) { waitB(ctx, "paused before its commit") })
		mB = mB.stoppingAt(func(ctx context.Context, _, _ string) { waitA(ctx) })
	} else {
		hookA := func(ctx context.Context, point string) error {
			waitB(ctx, "paused between its GET (the lock was free) and its SET")
			return nil
		}
		mA, errA = w.market(patient, markettrace.WithLockFunc(recipeLock(func(key string, _ time.Duration) flawed.Lock {
			return &flawed.GetThenSet{RDB: w.rdb, Key: key, Hook: hookA}
		}, nil)))
		mB, errB = w.market(patient, markettrace.WithLockFunc(recipeLock(func(key string, _ time.Duration) flawed.Lock {
			return &flawed.GetThenSet{RDB: w.rdb, Key: key}
		}, nil)))
		mB = mB.stoppingAt(func(ctx context.Context, _, _ string) { waitA(ctx) })
	}
	if err := errors.Join(errA, errB); err != nil {
		return o, err
	}
	var wg sync.WaitGroup
	aDone, aErr := w.start(ctx, &wg, mA, market.Fine, buy{laneA, "ann", "sam", "relic", 100})
	if err := aAtGap.wait(ctx); err != nil {
		return o, err
	}
	bDone, bErr := w.start(ctx, &wg, mB, market.Fine, buy{laneB, "bob", "sam", "relic", 100})
	go func() { bDone.wait(ctx); bAtGap.fire() }() // B giving up also lets A go on
	wg.Wait()
	for _, err := range []error{*aErr, *bErr} {
		if !expected(err) {
			return o, err
		}
	}
	if err := errs.err(); err != nil {
		return o, err
	}
	return o, o.audit(ctx, w.setup)
}

// crash records that the client ctx names stops for good here, holding
// key; when key is then a lock without expiry, that is the violation.
func (w *world) crash(ctx context.Context, key, why string) {
	_, client, ok := timeline.From(ctx)
	if !ok {
		return
	}
	if ttl, err := w.env.Client.PTTL(timeline.Quiet(ctx), key).Result(); err == nil && ttl == -1 {
		w.rec.AddViolation(client, timeline.Crash, "the lock has no expiry: nobody can ever take it",
			"%s; %s has no expiry", why, w.short(key))
		return
	}
	w.rec.Add(client, timeline.Crash, "%s", why)
}

// runCrashedHolder: a holder takes the market lock and crashes (never
// releases; with a hook, it crashes at the hook's point). The lease, if
// any, then runs out, and three buyers each try to buy their own listing.
// Each one blocked while its listing was there is a violation.
func runCrashedHolder(ctx context.Context, w *world, fixed bool, nl newLock) (outcome, error) {
	var o outcome
	buyers := []string{"ann", "bob", "cat"}
	lanes := []string{laneA, laneB, laneC}
	if err := w.users(ctx, map[string]int64{"sam": 0, "ann": 1000, "bob": 1000, "cat": 1000, "dan": 1000}); err != nil {
		return o, err
	}
	items := map[string]int64{}
	for i := range buyers {
		items["gem"+strconv.Itoa(i)] = 100
	}
	if err := w.list(ctx, "sam", items); err != nil {
		return o, err
	}
	w.rec.Lanes(append([]string{laneD}, lanes...)...)
	key := w.keys().MarketLock()
	crashed := false
	crash := func(ctx context.Context, point string) error {
		crashed = true
		w.crash(ctx, key, "crashes between SETNX and EXPIRE")
		return flawed.ErrCrashed
	}
	lockFunc := func(h flawed.Hook) markettrace.LockFunc {
		return recipeLock(func(key string, ttl time.Duration) flawed.Lock { return nl(w.rdb, key, ttl, h) }, nil)
	}
	// dan takes the lock and dies holding it.
	dctx := w.as(ctx, laneD)
	if fixed {
		if _, err := locking.NewMutex(w.rdb, key, lease).TryAcquire(dctx); err != nil {
			return o, err
		}
	} else if _, err := lockFunc(crash)(dctx, key, lease); err != nil && !errors.Is(err, flawed.ErrCrashed) {
		return o, err
	}
	if !crashed {
		w.crash(dctx, key, "crashes holding the lock, before its DEL")
	}
	// Time passes beyond the lease (a lock without expiry stays).
	if err := w.expire(ctx, key); err != nil {
		return o, err
	}
	var opts []market.Option
	if !fixed {
		opts = append(opts, markettrace.WithLockFunc(lockFunc(nil)))
	}
	m, err := w.market(impatient, opts...)
	if err != nil {
		return o, err
	}
	for i, b := range buyers {
		_, err := m.Purchase(w.as(ctx, lanes[i]), market.Coarse, b, "sam", "gem"+strconv.Itoa(i), 100)
		w.result(lanes[i], "purchase of gem"+strconv.Itoa(i), err)
		switch {
		case errors.Is(err, market.ErrContended):
			expiry := "no expiry"
			if ttl := w.env.Client.PTTL(ctx, key).Val(); ttl > 0 {
				expiry = "expiry in " + ttl.String()
			}
			o.add(1, "%s's purchase blocked: lock %s is held, %s", b, key, expiry)
		case err != nil:
			return o, err
		}
	}
	return o, o.audit(ctx, w.setup)
}

// runStaleRelease: under the market lock, A buys its own listing, then
// pauses past its lease, just before its release (recipe 4) or between
// the release's compare and DEL (recipe 5). Meanwhile B takes the lock
// and reaches its commit of listing "crown"; A's release then runs, and C
// tries to buy "crown" too; B commits last.
func runStaleRelease(ctx context.Context, w *world, fixed, inRelease bool) (outcome, error) {
	var o outcome
	if err := w.users(ctx, map[string]int64{"sam": 0, "ann": 1000, "bob": 1000, "cat": 1000}); err != nil {
		return o, err
	}
	if err := w.list(ctx, "sam", map[string]int64{"ring": 50, "crown": 100}); err != nil {
		return o, err
	}
	w.rec.Lanes(laneA, laneB, laneC)
	key := w.keys().MarketLock()
	var errs hookErrs
	aPaused, bAtCommit := newEvent(), newEvent()
	var cDone *event
	cStarted := newEvent()
	// A's pause: its lease runs out, then it waits until B holds the lock.
	why := "paused before its release"
	if inRelease && !fixed {
		why = "paused between its compare (the token is its own) and its DEL"
	}
	pauseA := func(ctx context.Context) {
		resume := w.pause(ctx, "%s", why)
		errs.add(w.expire(ctx, key))
		aPaused.fire()
		errs.add(bAtCommit.wait(ctx))
		resume()
	}
	newRecipe := func(h flawed.Hook) func(key string, ttl time.Duration) flawed.Lock {
		return func(key string, ttl time.Duration) flawed.Lock {
			if inRelease {
				return &flawed.CompareThenDel{RDB: w.rdb, Key: key, TTL: ttl, Hook: h}
			}
			return &flawed.SetPXThenDel{RDB: w.rdb, Key: key, TTL: ttl}
		}
	}
	var lockA, lockOthers markettrace.LockFunc
	switch {
	case fixed:
		lockA, lockOthers = mutexLock(w.rdb, pauseA), mutexLock(w.rdb, nil)
	case inRelease:
		hook := func(ctx context.Context, point string) error { pauseA(ctx); return nil }
		lockA, lockOthers = recipeLock(newRecipe(hook), nil), recipeLock(newRecipe(nil), nil)
	default:
		lockA, lockOthers = recipeLock(newRecipe(nil), pauseA), recipeLock(newRecipe(nil), nil)
	}
	mA, errA := w.market(patient, markettrace.WithLockFunc(lockA))
	mB, errB := w.market(patient, markettrace.WithLockFunc(lockOthers))
	mC, errC := w.market(impatient, markettrace.WithLockFunc(lockOthers))
	if err := errors.Join(errA, errB, errC); err != nil {
		return o, err
	}
	mB = mB.stoppingAt(func(ctx context.Context, _, _ string) {
		resume := w.pause(ctx, "waits at its commit until C is done")
		bAtCommit.fire()
		errs.add(cStarted.wait(ctx))
		errs.add(cDone.wait(ctx))
		resume()
	})
	var wg sync.WaitGroup
	aDone, aErr := w.start(ctx, &wg, mA, market.Coarse, buy{laneA, "ann", "sam", "ring", 50})
	if err := aPaused.wait(ctx); err != nil {
		return o, err
	}
	bDone, bErr := w.start(ctx, &wg, mB, market.Coarse, buy{laneB, "bob", "sam", "crown", 100})
	go func() { bDone.wait(ctx); bAtCommit.fire() }()
	if err := aDone.wait(ctx); err != nil {
		return o, err
	}
	var cErr *error
	cDone, cErr = w.start(ctx, &wg, mC, market.Coarse, buy{laneC, "cat", "sam", "crown", 100})
	cStarted.fire()
	wg.Wait()
	for _, err := range []error{*aErr, *bErr, *cErr} {
		if !expected(err) {
			return o, err
		}
	}
	if err := errs.err(); err != nil {
		return o, err
	}
	return o, o.audit(ctx, w.setup)
}

// runLeaseExpiry is the paused-holder scenario (package pausedholder):
// A holds the listing's lock and has checked the listing and its funds;
// just before its commit it stops, and its lease is made to run out. B
// takes the lock, buys the same listing and releases. Then A goes on and
// commits. nl nil means the correct locking.Mutex.
func runLeaseExpiry(ctx context.Context, w *world, fixed bool, nl newLock) (outcome, error) {
	var o outcome
	cast := pausedholder.Cast{Seller: "sam", Holder: "ann", Rival: "bob", Item: "idol", Price: 100}
	if err := w.users(ctx, cast.Funds()); err != nil {
		return o, err
	}
	if err := w.list(ctx, cast.Seller, map[string]int64{cast.Item: cast.Price}); err != nil {
		return o, err
	}
	w.rec.Lanes(laneA, laneB)
	var opts []market.Option
	if nl != nil {
		opts = append(opts, markettrace.WithLockFunc(recipeLock(func(key string, ttl time.Duration) flawed.Lock {
			return nl(w.rdb, key, ttl, nil)
		}, nil)))
	}
	if fixed {
		opts = append(opts, market.WithFencing())
	}
	mB, errB := w.market(patient, opts...)
	mA, errA := w.market(patient, opts...)
	if err := errors.Join(errA, errB); err != nil {
		return o, err
	}
	what := "purchase of " + cast.Item
	var bErr error
	a, err := pausedholder.Trial{
		Holder: pausedholder.NewHookHolder(mA.Market, market.Fine, cast, "paused before its commit, past its lease", 0),
		Lapse: func(ctx context.Context) error {
			return w.expire(ctx, w.keys().ItemLock(cast.Item, cast.Seller))
		},
		Rival: func(ctx context.Context) {
			_, bErr = mB.Purchase(w.as(ctx, laneB), market.Fine, cast.Rival, cast.Seller, cast.Item, cast.Price)
			w.result(laneB, what, bErr)
		},
	}.Run(w.as(ctx, laneA))
	if err != nil {
		return o, err
	}
	w.result(laneA, what, a.Err)
	for _, err := range []error{a.Err, bErr} {
		if !expected(err) {
			return o, err
		}
	}
	return o, o.audit(ctx, w.setup)
}

// Lanes of the read-write scenario.
const (
	laneR1     = "reader 1"
	laneR2     = "reader 2"
	laneWriter = "writer"
)

// runSeedRW: readers add up the buyer's and the seller's funds (two
// reads); a writer makes a purchase between them. Two readers take read
// holds, the second reads and releases; the first reads the buyer's funds,
// then the writer tries to take the write lock (giving up after
// "impatient") and buys; the first reader reads the seller's funds. Each
// read that does not add up to the money the two have is a violation.
// The read-write lock's key is not under the market's lock: prefix, so its
// steps are recorded as the scenario sees them rather than read from its
// commands.
func runSeedRW(ctx context.Context, w *world, fixed bool) (outcome, error) {
	var o outcome
	if err := w.users(ctx, map[string]int64{"sam": 0, "ann": 1000}); err != nil {
		return o, err
	}
	if err := w.list(ctx, "sam", map[string]int64{"atlas": 100}); err != nil {
		return o, err
	}
	w.rec.Lanes(laneR1, laneR2, laneWriter)
	k := w.keys()
	rdb := w.rdb
	r1ctx, r2ctx, wctx := w.as(ctx, laneR1), w.as(ctx, laneR2), w.as(ctx, laneWriter)
	funds := func(ctx context.Context, user string) (int64, error) {
		return rdb.HGet(ctx, k.User(user), "funds").Int64()
	}
	read := func(ctx context.Context, reader string, between func() error) error {
		a, err := funds(ctx, "ann")
		if err != nil {
			return err
		}
		if between != nil {
			if err := between(); err != nil {
				return err
			}
		}
		s, err := funds(ctx, "sam")
		if err != nil {
			return err
		}
		if a+s != 1000 {
			o.add(1, "%s read ann %d + sam %d = %d, but they hold 1000 between them", reader, a, s, a+s)
			w.rec.AddViolation(reader, timeline.Result, "a torn read: a write landed inside it",
				"reads ann %d + sam %d = %d (they hold 1000)", a, s, a+s)
			return nil
		}
		w.rec.Add(reader, timeline.Result, "reads ann %d + sam %d = %d", a, s, a+s)
		return nil
	}
	writer, err := w.market(patient)
	if err != nil {
		return o, err
	}
	buy := func() error {
		_, err := writer.Purchase(wctx, market.Lua, "ann", "sam", "atlas", 100)
		w.result(laneWriter, "purchase of atlas", err)
		return err
	}
	c := rwClients{r1ctx: r1ctx, r2ctx: r2ctx, wctx: wctx, key: k.Prefix() + "rw", read: read, buy: buy}
	run := seedRWFlawed
	if fixed {
		run = seedRWFixed
	}
	if err := run(w, c); err != nil {
		return o, err
	}
	return o, o.audit(ctx, w.setup)
}

// rwClients is what the read-write scenario's clients share: each one's
// context, the lock's key, a reader's two reads and the writer's purchase.
type rwClients struct {
	r1ctx, r2ctx, wctx context.Context
	key                string
	read               func(ctx context.Context, reader string, between func() error) error
	buy                func() error
}

// rwLock is the read-write scenario's lock as its clients drive it, and
// what the timeline records of the steps where one lock differs from the
// other.
type rwLock struct {
	// read takes a read hold; write takes the write hold, or returns
	// locking.ErrNotAcquired when it is refused. Each returns the hold's
	// release.
	read, write func(ctx context.Context) (release func(ctx context.Context) error, err error)
	// took1 and took2 are reader 1's and reader 2's acquisitions,
	// released2 reader 2's release, refused the writer's refusal and
	// released1 reader 1's release.
	took1, took2, released2, refused, released1 string
}

// runRW runs the clients of the read-write scenario with l: two readers
// take read holds, the second reads and releases; the first reads the
// buyer's funds, then the writer tries to take the write lock and, if it
// gets it, buys; the first reader reads the seller's funds and releases.
func runRW(w *world, c rwClients, l rwLock) error {
	r1, err := l.read(c.r1ctx)
	if err != nil {
		return err
	}
	w.rec.Add(laneR1, timeline.Acquire, "%s", l.took1)
	r2, err := l.read(c.r2ctx)
	if err != nil {
		return err
	}
	w.rec.Add(laneR2, timeline.Acquire, "%s", l.took2)
	if err := c.read(c.r2ctx, laneR2, nil); err != nil {
		return err
	}
	if err := r2(c.r2ctx); err != nil {
		return err
	}
	w.rec.Add(laneR2, timeline.Release, "%s", l.released2)
	err = c.read(c.r1ctx, laneR1, func() error {
		release, err := l.write(c.wctx)
		if errors.Is(err, locking.ErrNotAcquired) {
			w.rec.Add(laneWriter, timeline.AcquireFailed, "%s", l.refused)
			return nil // the writer waits its turn (here: gives up)
		}
		if err != nil {
			return err
		}
		w.rec.AddViolation(laneWriter, timeline.Acquire, "a writer admitted while reader 1 reads", "takes the write lock")
		defer func() {
			release(c.wctx)
			w.rec.Add(laneWriter, timeline.Release, "releases the write lock")
		}()
		return c.buy()
	})
	if err != nil {
		return err
	}
	if err := r1(c.r1ctx); err != nil {
		return err
	}
	w.rec.Add(laneR1, timeline.Release, "%s", l.released1)
	return nil
}

// seedRWFixed runs the read-write scenario with locking.RWMutex, whose
// writer, refused while reader 1 reads, gets in once the readers are
// gone.
func seedRWFixed(w *world, c rwClients) error {
	rw := locking.NewRWMutex(w.rdb, c.key, lease)
	err := runRW(w, c, rwLock{
		read: func(ctx context.Context) (func(ctx context.Context) error, error) {
			h, err := rw.AcquireRead(ctx)
			if err != nil {
				return nil, err
			}
			return h.Release, nil
		},
		write: func(ctx context.Context) (func(ctx context.Context) error, error) {
			actx, cancel := context.WithTimeout(ctx, impatient)
			defer cancel()
			h, err := rw.AcquireWrite(actx)
			if err != nil {
				return nil, err
			}
			return h.Release, nil
		},
		took1: "takes a read hold of its own", took2: "takes a read hold of its own",
		released2: "releases its own read hold", released1: "releases its own read hold",
		refused: fmt.Sprintf("write lock refused while reader 1 reads: gives up after %v", impatient),
	})
	if err != nil {
		return err
	}
	// Now the writer gets in.
	h, err := rw.AcquireWrite(c.wctx)
	if err != nil {
		return fmt.Errorf("writer after the readers: %w", err)
	}
	w.rec.Add(laneWriter, timeline.Acquire, "takes the write lock (no reader left)")
	if err := c.buy(); err != nil {
		return err
	}
	h.Release(c.wctx)
	w.rec.Add(laneWriter, timeline.Release, "releases the write lock")
	return nil
}

// seedRWFlawed runs the read-write scenario with the seed article's lock
// (flawed.SeedRWLock).
func seedRWFlawed(w *world, c rwClients) error {
	// Each client has its own clock; one millisecond apart is enough for
	// the seed's timestamps to differ.
	clock := time.Now()
	var mu sync.Mutex
	tick := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}
	l := &flawed.SeedRWLock{RDB: w.rdb, Key: c.key, KeyTTL: lease, ReadTTL: lease, WriteTTL: lease, Now: tick}
	hold := func(acquire func(context.Context) (string, error), release func(context.Context, string) error) func(ctx context.Context) (func(ctx context.Context) error, error) {
		return func(ctx context.Context) (func(ctx context.Context) error, error) {
			v, err := acquire(ctx)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) error { return release(ctx, v) }, nil
		}
	}
	return runRW(w, c, rwLock{
		read: hold(l.TryAcquireRead, l.ReleaseRead), write: hold(l.TryAcquireWrite, l.ReleaseWrite),
		took1:     "takes a read hold: the one read field of the lock",
		took2:     "takes a read hold: overwrites the one read field",
		released2: "releases: deletes the one read field, reader 1's hold with it",
		refused:   "write lock refused while reader 1 reads",
		released1: "releases its read hold (already gone)",
	})
}
