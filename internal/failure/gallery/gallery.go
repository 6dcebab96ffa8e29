// Package gallery reproduces the failure of each flawed lock recipe of
// package internal/flawed in the market, deterministically, and then runs
// the same scenario with the recipe that fixes it. The fault is injected
// at the recipe's vulnerable point through hooks: a client is paused there
// (on channels, never by sleeping) while another runs, a lease is made to
// run out, or a holder "crashes". The damage is measured with the market's
// own audit (an item sold twice, a sale not paid exactly once), or, where
// the flaw shows as a stuck lock or a torn read, by counting the blocked
// purchases or inconsistent reads.
package gallery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/pausedholder"
	"github.com/lockmarket/lockmarket/internal/flawed"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/timeline"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// Env is the Redis the scenarios run on.
type Env struct {
	// Client is the connection.
	Client redis.UniversalClient
	// Mini is the embedded server when Client talks to miniredis, whose
	// keys expire only when its clock is moved; nil otherwise.
	Mini *miniredis.Miniredis
}

// expire makes key's lease run out now, as if its TTL had passed; a key
// without a TTL is left alone (no amount of waiting would expire it). It
// reports whether the key had a lease to run out.
func (e Env) expire(ctx context.Context, key string) (bool, error) {
	ctx = timeline.Quiet(ctx)
	ttl, err := e.Client.PTTL(ctx, key).Result()
	if err != nil {
		return false, err
	}
	if ttl <= 0 {
		return false, nil
	}
	if e.Mini != nil {
		e.Mini.FastForward(ttl + time.Millisecond)
		return true, nil
	}
	old, err := e.Client.Get(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	if err := e.Client.PExpire(ctx, key, time.Millisecond).Err(); err != nil {
		return false, err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := e.Client.Get(ctx, key).Result()
		switch {
		case errors.Is(err, redis.Nil) || (err == nil && v != old):
			return true, nil
		case err != nil:
			return false, err // the run was cancelled, or Redis failed: waiting would not help
		case time.Now().After(deadline):
			return false, fmt.Errorf("gallery: %s did not expire", key)
		}
		if err := (locking.RealClock{}).Sleep(ctx, time.Millisecond); err != nil {
			return false, err
		}
	}
}

// Row is the outcome of one scenario: the flawed recipe under its fault,
// and the fix under the same fault.
type Row struct {
	// Recipe is the recipe, written in JSON as "ID NAME".
	Recipe          flawed.Recipe `json:"recipe"`
	Fault           string        `json:"fault"`
	Consequence     string        `json:"consequence"`
	Violations      int           `json:"violations"`
	FixedBy         string        `json:"fixed_by"`
	FixedViolations int           `json:"fixed_violations"`
	// Details describes what the flawed run broke (first few findings).
	Details []string `json:"details,omitempty"`
	// FixedDetails describes anything the fixed run broke (nothing, if the
	// fix works).
	FixedDetails []string `json:"fixed_details,omitempty"`
	// Timeline and FixedTimeline are what each client did in the flawed
	// and the fixed run, step by step.
	Timeline      timeline.Timeline `json:"-"`
	FixedTimeline timeline.Timeline `json:"-"`
}

// Scenario is one recipe's demonstration: the fault injected, its
// consequence, and the recipe that fixes it.
type Scenario struct {
	Recipe                      flawed.Recipe
	Fault, Consequence, FixedBy string
	run                         runFunc
}

type outcome struct {
	violations int
	details    []string
}

func (o *outcome) add(n int, format string, args ...any) {
	o.violations += n
	if n > 0 && len(o.details) < 8 {
		o.details = append(o.details, fmt.Sprintf(format, args...))
	}
}

// audit adds the market's audit violations to o.
func (o *outcome) audit(ctx context.Context, m *market.Market) error {
	rep, err := m.Audit(ctx)
	if err != nil {
		return err
	}
	o.violations += rep.Total()
	for _, d := range rep.Details {
		if len(o.details) < 8 {
			o.details = append(o.details, d)
		}
	}
	return nil
}

// Run runs the scenario with the flawed recipe and then with the fix, each
// on a fresh market whose keys are deleted afterwards, and records what
// every client did (Row.Timeline, Row.FixedTimeline).
func (s Scenario) Run(ctx context.Context, env Env) (Row, error) {
	row := Row{Recipe: s.Recipe, Fault: s.Fault, Consequence: s.Consequence, FixedBy: s.FixedBy}
	for _, fixed := range []bool{false, true} {
		o, tl, err := s.runOne(ctx, env, fixed)
		if err != nil {
			return row, err
		}
		if fixed {
			row.FixedViolations, row.FixedDetails, row.FixedTimeline = o.violations, o.details, tl
		} else {
			row.Violations, row.Details, row.Timeline = o.violations, o.details, tl
		}
	}
	return row, nil
}

// Variant names the flawed or the fixed run of a scenario.
func Variant(fixed bool) string {
	if fixed {
		return "fixed"
	}
	return "flawed"
}

// RunOne runs the scenario once, with the flawed recipe or with its fix,
// on a fresh market whose keys are deleted afterwards, and returns the
// timeline of the run: its events end with the checkers' findings, and
// its Violations and Verdict say what they found.
func (s Scenario) RunOne(ctx context.Context, env Env, fixed bool) (timeline.Timeline, error) {
	_, tl, err := s.runOne(ctx, env, fixed)
	return tl, err
}

func (s Scenario) runOne(ctx context.Context, env Env, fixed bool) (outcome, timeline.Timeline, error) {
	w, err := newWorld(env)
	if err != nil {
		return outcome{}, timeline.Timeline{}, fmt.Errorf("gallery: %s: %w", s.Recipe, err)
	}
	defer w.close()
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	o, err := s.run(sctx, w, fixed)
	cancel()
	if cerr := w.cleanup(context.WithoutCancel(ctx)); err == nil && cerr != nil {
		err = fmt.Errorf("deleting the market: %w", cerr)
	}
	if err != nil {
		return o, timeline.Timeline{}, fmt.Errorf("gallery: %s (%s): %w", s.Recipe, Variant(fixed), err)
	}
	for _, d := range o.details {
		w.rec.Finding(true, "%s", strings.ReplaceAll(d, w.keys().Prefix(), ""))
	}
	if o.violations == 0 {
		w.rec.Finding(false, "no violation: the audit is clean")
	}
	return o, w.rec.Finish(s.Title(), Variant(fixed), s.Verdict(fixed, o.violations), o.violations), nil
}

// Title names the scenario's timelines: "recipe ID NAME".
func (s Scenario) Title() string { return "recipe " + s.Recipe.String() }

// Verdict says in words what one run of the scenario showed: the flawed
// recipe's run (or, when fixed, the fix's) with so many violations.
func (s Scenario) Verdict(fixed bool, violations int) string {
	switch {
	case !fixed && violations > 0:
		return fmt.Sprintf("Broken: %s (%s).", s.Consequence, output.Plural(violations, "violation"))
	case !fixed:
		return "This run showed no violation, though the recipe is flawed."
	case violations == 0:
		return fmt.Sprintf("Fixed by %s: no violation.", s.FixedBy)
	}
	return fmt.Sprintf("Still broken with %s: %s.", s.FixedBy, output.Plural(violations, "violation"))
}

// RunAll runs every scenario in order.
func RunAll(ctx context.Context, env Env) ([]Row, error) {
	var rows []Row
	for _, s := range Scenarios() {
		r, err := s.Run(ctx, env)
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// Durations of the scenarios. Leases are long: they end only when a
// scenario makes them end. A client that must give up does so after
// impatient.
const (
	lease     = 10 * time.Second
	patient   = 30 * time.Second
	impatient = 300 * time.Millisecond
)

// world is one fresh market for one run of a scenario, with a client of
// its own whose commands are recorded when their context names a client
// (see as).
type world struct {
	env    Env
	rdb    redis.UniversalClient
	name   string
	ledger *market.Ledger
	setup  *market.Market
	rec    *timeline.Recorder
}

func newWorld(env Env) (*world, error) {
	b := make([]byte, 5)
	rand.Read(b)
	w := &world{env: env, name: "gallery-" + hex.EncodeToString(b), ledger: market.NewLedger()}
	hooks := []redis.Hook{timeline.Hook{}}
	if env.Mini != nil {
		hooks = append(hooks, redisconn.MiniWatchHook{})
	}
	w.rdb = redisconn.SizedClient(env.Client, 16, hooks...)
	w.rec = timeline.NewRecorder(w.keys().Prefix())
	setup, err := w.market(patient)
	if err != nil {
		w.close()
		return nil, err
	}
	w.setup = setup.Market
	return w, nil
}

// close closes the world's own client.
func (w *world) close() {
	if w.rdb != w.env.Client {
		w.rdb.Close()
	}
}

// as returns ctx naming client as the one acting, so that its commands
// are recorded.
func (w *world) as(ctx context.Context, client string) context.Context { return w.rec.As(ctx, client) }

// pause records that the client ctx names stops here, and returns what
// records that it goes on.
func (w *world) pause(ctx context.Context, format string, args ...any) (resume func()) {
	_, client, ok := timeline.From(ctx)
	if !ok {
		return func() {}
	}
	w.rec.Add(client, timeline.PauseStart, format, args...)
	return func() { w.rec.Add(client, timeline.PauseEnd, "goes on") }
}

// expire makes key's lease run out (see Env.expire) and records it.
func (w *world) expire(ctx context.Context, key string) error {
	ran, err := w.env.expire(ctx, key)
	if err == nil && ran {
		w.rec.LeaseExpired(key, "lease on %s ran out (made to, as if its TTL had passed)", w.short(key))
	}
	return err
}

func (w *world) short(key string) string { return strings.TrimPrefix(key, w.keys().Prefix()) }

// result records the answer a client's purchase got.
func (w *world) result(client, what string, err error) {
	w.rec.Add(client, timeline.Result, "%s: %s", what, describe(err, w.keys().Prefix()))
}

// describe says in a few words what an operation's error means, with
// keys shown without the market's prefix.
func describe(err error, prefix string) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, locking.ErrLockLost):
		return "refused: its lock was lost before the commit"
	case errors.Is(err, market.ErrContended):
		return "gave up: the lock stayed taken"
	case errors.Is(err, market.ErrListingNotFound):
		return "refused: the listing is gone"
	case errors.Is(err, flawed.ErrCrashed):
		return "crashed"
	}
	return strings.ReplaceAll(err.Error(), prefix, "")
}

// market returns a client of the world's market (all share one ledger, so
// the audit knows every acknowledged sale) with its own purchase timeout
// and options.
func (w *world) market(timeout time.Duration, opts ...market.Option) (trader, error) {
	opts = append([]market.Option{market.WithLedger(w.ledger), market.WithLockTTL(lease),
		market.WithTimeouts(timeout, timeout)}, opts...)
	m, err := market.New(w.rdb, w.name, opts...)
	return trader{Market: m}, err
}

// trader is a client of a scenario's market whose purchases may stop just
// before their commit, where the scenario's step happens.
type trader struct {
	*market.Market
	stop pausedholder.Hook
}

// stoppingAt returns t with h run before each commit.
func (t trader) stoppingAt(h pausedholder.Hook) trader { t.stop = h; return t }

// Purchase is market.Purchase with the trader's stop. The hook is set even
// when nil, so a purchase made from inside another trader's stop does not
// inherit that stop.
func (t trader) Purchase(ctx context.Context, s market.Strategy, buyer, seller, item string, price int64) (market.Cost, error) {
	return t.Market.Purchase(pausedholder.WithBeforeCommit(ctx, t.stop), s, buyer, seller, item, price)
}

func (w *world) keys() markettrace.Keys { return markettrace.NewKeys(w.name) }

// users creates users with funds; items are granted to and listed by the
// first user of each pair item -> price.
func (w *world) users(ctx context.Context, funds map[string]int64) error {
	for id, f := range funds {
		if _, err := w.setup.CreateUser(ctx, id, id, f); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) list(ctx context.Context, seller string, items map[string]int64) error {
	for item, price := range items {
		if err := w.setup.GrantItem(ctx, seller, item); err != nil {
			return err
		}
		if _, err := w.setup.List(ctx, market.Lua, seller, item, price); err != nil {
			return err
		}
	}
	return nil
}

// cleanup deletes the world's keys.
func (w *world) cleanup(ctx context.Context) error { return w.setup.Delete(ctx) }

// event is a one-shot signal between the clients of a scenario.
type event struct {
	once sync.Once
	ch   chan struct{}
}

func newEvent() *event { return &event{ch: make(chan struct{})} }

func (e *event) fire() { e.once.Do(func() { close(e.ch) }) }

func (e *event) wait(ctx context.Context) error {
	select {
	case <-e.ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("gallery: a client never reached its step: %w", ctx.Err())
	}
}

// patientRelease is the context of a release in a scenario: the market
// bounds a release at a second of real time, but a scenario's pause in a
// release (recipes 4 and 5) waits there for other clients to reach their
// step, which on a busy machine takes longer. The release keeps ctx's
// values (the client it records as) and gets the scenario's patience;
// the clients it waits for are bounded by theirs.
func patientRelease(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), patient)
}

// recipeLock adapts a flawed recipe to the market's LockFunc. pause, if
// set, runs just before the lock is released.
func recipeLock(newLock func(key string, ttl time.Duration) flawed.Lock, pause func(ctx context.Context)) markettrace.LockFunc {
	return func(ctx context.Context, key string, ttl time.Duration) (markettrace.Lease, error) {
		l := newLock(key, ttl)
		token, waits, err := flawed.Acquire(ctx, l, locking.DefaultBackoff)
		if err != nil {
			return markettrace.Lease{}, err
		}
		return markettrace.Lease{Token: token, Waits: waits, Release: func(rctx context.Context) error {
			rctx, cancel := patientRelease(rctx)
			defer cancel()
			if pause != nil {
				pause(rctx)
			}
			return l.Release(rctx, token)
		}}, nil
	}
}

// mutexLock is the correct locking.Mutex as a LockFunc, with a pause just
// before its release.
func mutexLock(rdb redis.UniversalClient, pause func(ctx context.Context)) markettrace.LockFunc {
	return func(ctx context.Context, key string, ttl time.Duration) (markettrace.Lease, error) {
		l, err := locking.NewMutex(rdb, key, ttl).Acquire(ctx)
		if err != nil {
			return markettrace.Lease{}, err
		}
		return markettrace.Lease{Token: l.Token(), Waits: l.Waits(), Release: func(rctx context.Context) error {
			rctx, cancel := patientRelease(rctx)
			defer cancel()
			if pause != nil {
				pause(rctx)
			}
			return l.Release(rctx)
		}}, nil
	}
}

// buy is a purchase a client of a scenario makes, as lane: buyer buys
// seller's item at price.
type buy struct {
	lane, buyer, seller, item string
	price                     int64
}

// start makes purchase b with m under strategy s in a goroutine of wg,
// and records its answer in b.lane; it returns an event fired when the
// purchase has returned, and where its error will be.
func (w *world) start(ctx context.Context, wg *sync.WaitGroup, m trader, s market.Strategy, b buy) (*event, *error) {
	return client(wg, func() error {
		_, err := m.Purchase(w.as(ctx, b.lane), s, b.buyer, b.seller, b.item, b.price)
		w.result(b.lane, "purchase of "+b.item, err)
		return err
	})
}

// client runs op in a goroutine and returns an event fired when it ends,
// and where its error will be.
func client(wg *sync.WaitGroup, op func() error) (*event, *error) {
	done := newEvent()
	var err error
	wg.Go(func() {
		defer done.fire()
		err = op()
	})
	return done, &err
}
