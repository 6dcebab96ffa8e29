// Package gallery reproduces the failure of each flawed lock recipe of
// package locking/flawed in the market, deterministically, and then runs
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
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/faultpoint"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/locking/flawed"
	"github.com/lockmarket/lockmarket/market"
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
// without a TTL is left alone (no amount of waiting would expire it).
func (e Env) expire(ctx context.Context, key string) error {
	ttl, err := e.Client.PTTL(ctx, key).Result()
	if err != nil {
		return err
	}
	if ttl <= 0 {
		return nil
	}
	if e.Mini != nil {
		e.Mini.FastForward(ttl + time.Millisecond)
		return nil
	}
	old, err := e.Client.Get(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if err := e.Client.PExpire(ctx, key, time.Millisecond).Err(); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := e.Client.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) || (err == nil && v != old) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gallery: %s did not expire", key)
		}
		time.Sleep(time.Millisecond)
	}
}

// Row is the outcome of one scenario: the flawed recipe under its fault,
// and the fix under the same fault.
type Row struct {
	Recipe          string `json:"recipe"`
	Fault           string `json:"fault"`
	Consequence     string `json:"consequence"`
	Violations      int    `json:"violations"`
	FixedBy         string `json:"fixed_by"`
	FixedViolations int    `json:"fixed_violations"`
	// Details describes what the flawed run broke (first few findings).
	Details []string `json:"details,omitempty"`
	// FixedDetails describes anything the fixed run broke (nothing, if the
	// fix works).
	FixedDetails []string `json:"fixed_details,omitempty"`
}

// Scenario is one recipe's demonstration.
type Scenario struct {
	Recipe, Fault, Consequence, FixedBy string
	run                                 func(ctx context.Context, w *world, fixed bool) (outcome, error)
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
// on a fresh market whose keys are deleted afterwards.
func (s Scenario) Run(ctx context.Context, env Env) (Row, error) {
	row := Row{Recipe: s.Recipe, Fault: s.Fault, Consequence: s.Consequence, FixedBy: s.FixedBy}
	for _, fixed := range []bool{false, true} {
		w, err := newWorld(env)
		if err != nil {
			return row, fmt.Errorf("gallery: %s: %w", s.Recipe, err)
		}
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		o, err := s.run(sctx, w, fixed)
		cancel()
		if cerr := w.cleanup(context.WithoutCancel(ctx)); err == nil && cerr != nil {
			err = fmt.Errorf("deleting the market: %w", cerr)
		}
		if err != nil {
			variant := "flawed"
			if fixed {
				variant = "fixed"
			}
			return row, fmt.Errorf("gallery: %s (%s): %w", s.Recipe, variant, err)
		}
		if fixed {
			row.FixedViolations, row.FixedDetails = o.violations, o.details
		} else {
			row.Violations, row.Details = o.violations, o.details
		}
	}
	return row, nil
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

// world is one fresh market for one run of a scenario.
type world struct {
	env    Env
	name   string
	ledger *market.Ledger
	setup  *market.Market
}

func newWorld(env Env) (*world, error) {
	b := make([]byte, 5)
	rand.Read(b)
	w := &world{env: env, name: "gallery-" + hex.EncodeToString(b), ledger: market.NewLedger()}
	setup, err := w.market(patient)
	if err != nil {
		return nil, err
	}
	w.setup = setup.Market
	return w, nil
}

// market returns a client of the world's market (all share one ledger, so
// the audit knows every acknowledged sale) with its own purchase timeout
// and options.
func (w *world) market(timeout time.Duration, opts ...market.Option) (trader, error) {
	opts = append([]market.Option{market.WithLedger(w.ledger), market.WithLockTTL(lease),
		market.WithTimeouts(timeout, timeout)}, opts...)
	m, err := market.New(w.env.Client, w.name, opts...)
	return trader{Market: m}, err
}

// trader is a client of a scenario's market whose purchases may stop just
// before their commit, where the scenario's step happens.
type trader struct {
	*market.Market
	stop faultpoint.Hook
}

// stoppingAt returns t with h run before each commit.
func (t trader) stoppingAt(h faultpoint.Hook) trader { t.stop = h; return t }

// Purchase is market.Purchase with the trader's stop. The hook is set even
// when nil, so a purchase made from inside another trader's stop does not
// inherit that stop.
func (t trader) Purchase(ctx context.Context, s market.Strategy, buyer, seller, item string, price int64) (market.Cost, error) {
	return t.Market.Purchase(faultpoint.WithBeforeCommit(ctx, t.stop), s, buyer, seller, item, price)
}

func (w *world) keys() market.Keys { return market.NewKeys(w.name) }

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

// recipeLock adapts a flawed recipe to the market's LockFunc. pause, if
// set, runs just before the lock is released.
func recipeLock(newLock func(key string, ttl time.Duration) flawed.Lock, pause func(ctx context.Context)) market.LockFunc {
	return func(ctx context.Context, key string, ttl time.Duration) (market.Lease, error) {
		l := newLock(key, ttl)
		token, waits, err := flawed.Acquire(ctx, l, locking.DefaultBackoff)
		if err != nil {
			return market.Lease{}, err
		}
		return market.Lease{Token: token, Waits: waits, Release: func(rctx context.Context) error {
			if pause != nil {
				pause(rctx)
			}
			return l.Release(rctx, token)
		}}, nil
	}
}

// mutexLock is the correct locking.Mutex as a LockFunc, with a pause just
// before its release.
func mutexLock(rdb redis.UniversalClient, pause func(ctx context.Context)) market.LockFunc {
	return func(ctx context.Context, key string, ttl time.Duration) (market.Lease, error) {
		l, err := locking.NewMutex(rdb, key, ttl).Acquire(ctx)
		if err != nil {
			return market.Lease{}, err
		}
		return market.Lease{Token: l.Token(), Waits: l.Waits, Release: func(rctx context.Context) error {
			if pause != nil {
				pause(rctx)
			}
			return l.Release(rctx)
		}}, nil
	}
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
