// Package sim is the simulator's engine: it runs one cell (a scenario of
// listers and buyers under one strategy, for a duration) against a fresh
// market, measures every operation, stops cleanly, and audits the market.
//
// The workload, which the book does not publish and is therefore ours:
// each lister loops "create a new item in its own inventory, list it at a
// random price"; each buyer loops "read the K cheapest listings, pick one
// at random, buy it at its listed price". Buyers start with funds they
// cannot spend in any run this engine allows, and money is never added, so
// the audit can check that it is conserved.
package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/latency"
	"github.com/lockmarket/lockmarket/internal/probe"
	"github.com/lockmarket/lockmarket/market"
)

// Workload constants (documented in the README).
const (
	// MinPrice and MaxPrice bound the uniformly random listing price.
	MinPrice = 1
	MaxPrice = 1000
	// BuyerFunds is each buyer's starting money: 10^11 at most 1000 a
	// purchase is 10^8 purchases, far beyond any run, and 1000 buyers
	// stay within market.MaxMarketMoney.
	BuyerFunds = 100_000_000_000
	// DefaultPick is how many of the cheapest listings a buyer picks from.
	DefaultPick = 10
	// EmptyMarketPause is how long a buyer sleeps when it finds no listing,
	// so that an empty market is not polled in a hot loop.
	EmptyMarketPause = 500 * time.Microsecond
	// ErrorPause is how long a worker sleeps after an unexpected error
	// (Redis unreachable, say) before it tries again.
	ErrorPause = 10 * time.Millisecond
)

// ErrConfig is returned by Run for an invalid Config.
var ErrConfig = errors.New("sim: invalid config")

// Config describes one cell.
type Config struct {
	// Client is the Redis connection; size its pool for Listers+Buyers
	// (see redisconn.SizedClient), or workers queue for connections.
	Client redis.UniversalClient
	// Scenario is how many listers and buyers run.
	Scenario Scenario
	// Strategy is the concurrency control every worker uses.
	Strategy market.Strategy
	// Duration is how long the workers run (at most; see Run).
	Duration time.Duration
	// Seed seeds each worker's random numbers (prices, choices), so a cell
	// makes the same choices given the same market state.
	Seed uint64
	// Pick is K: a buyer chooses among the K cheapest listings (default
	// DefaultPick).
	Pick int
	// Name is the market name; empty means "sim-" plus a random ID. Its
	// keys must not exist yet.
	Name string
	// MarketOptions are passed to market.New (fault injection hooks,
	// timeouts).
	MarketOptions []market.Option
	// Progress, if set, is called from one goroutine about every
	// ProgressEvery (default 250 ms) while the workers run.
	Progress func(Counters)
	// ProgressEvery is the period of Progress calls.
	ProgressEvery time.Duration
	// KeepKeys leaves the market's keys in Redis after the cell; by
	// default they are deleted once the audit is done.
	KeepKeys bool
	// Markets is how many independent markets run at once (default 1),
	// each with the scenario's listers and buyers, so Markets x Listers
	// listers in all. Their names are Names, or else Name-0, Name-1, ...
	// chosen by SpreadNames so that on a cluster they land on the masters
	// in turn.
	Markets int
	// Names, if set, are the markets' names (len(Names) == Markets).
	Names []string
	// Prefill is how many listings each market holds before the workers
	// start: a filler seller's items, listed at PrefillMinPrice and above,
	// beyond the listers' prices, so buyers reach them only if the market
	// runs out of cheaper ones.
	Prefill int
}

// Prefill workload constants.
const (
	// PrefillMinPrice is the lowest price of a prefilled listing; prices
	// cycle through PrefillMinPrice..PrefillMinPrice+999.
	PrefillMinPrice = MaxPrice + 1
	// PrefillBatch is how many listings one bulk call creates.
	PrefillBatch = 1000
	// PrefillSeller is the filler seller's user ID.
	PrefillSeller = "P"
	// MaxPrefill bounds Config.Prefill.
	MaxPrefill = 10_000_000
	// MaxMarkets bounds Config.Markets.
	MaxMarkets = 64
)

// Counters are the live totals of a running cell.
type Counters struct {
	Elapsed time.Duration
	Listed  int64
	Bought  int64
	Failed  int64
	Retries int64
}

// Failures counts failed purchases by reason. A failure is an operation
// that ended without buying; WATCH retries inside an operation that
// eventually bought are not failures.
type Failures struct {
	// ListingGone: the listing had been bought (or never existed) by the
	// time the purchase ran.
	ListingGone int64 `json:"listing_gone"`
	// PriceChanged: the listing's price was not the one read.
	PriceChanged int64 `json:"price_changed"`
	// InsufficientFunds: the buyer could not afford it.
	InsufficientFunds int64 `json:"insufficient_funds"`
	// Contended: the lock or the transaction could not be had in the
	// operation's time (10 s for a purchase).
	Contended int64 `json:"contended"`
	// Other: anything else (a Redis error, say).
	Other int64 `json:"other"`
}

// Total is the number of failed purchases.
func (f Failures) Total() int64 {
	return f.ListingGone + f.PriceChanged + f.InsufficientFunds + f.Contended + f.Other
}

func (f *Failures) add(o Failures) {
	f.ListingGone += o.ListingGone
	f.PriceChanged += o.PriceChanged
	f.InsufficientFunds += o.InsufficientFunds
	f.Contended += o.Contended
	f.Other += o.Other
}

// Result is what one cell measured.
type Result struct {
	Scenario Scenario
	Strategy market.Strategy
	// Market is the market's name.
	Market string
	// Duration is the configured duration; Elapsed is the time from the
	// workers' start to the stop signal (shorter than Duration only when
	// interrupted); Drain is the time the workers then took to finish the
	// operation each had in flight.
	Duration, Elapsed, Drain time.Duration
	// Interrupted is set when the context ended before Duration.
	Interrupted bool

	// Listed counts acknowledged listings; FailedLists the List calls that
	// failed; ListRetries and ListLockWaits their cost.
	Listed, FailedLists, ListRetries, ListLockWaits int64
	// Bought counts acknowledged purchases; Failed the Purchase calls that
	// did not buy, by reason.
	Bought int64
	Failed Failures
	// Retries is the sum of Cost.Retries over all Purchase calls (the
	// book's "purchase retries"); LockWaits the sum of Cost.LockWaits.
	Retries, LockWaits int64
	// LockLost counts operations whose lock lease expired while held.
	LockLost int64
	// EmptyPolls counts the times a buyer found the market empty.
	EmptyPolls int64
	// Wait is the wall time of each successful purchase.
	Wait *latency.Histogram
	// FirstError is the first unexpected error a worker saw, if any.
	FirstError string
	// Audit is the invariant audit run after the workers stopped (summed
	// over the markets).
	Audit market.Report

	// Markets names every market of the cell (Market is the first).
	Markets []string
	// Prefill is the listings each market held before the workers started;
	// PrefillTime the time it took to create them.
	Prefill     int
	PrefillTime time.Duration
	// Server holds Redis's counters (summed over a cluster's masters):
	// Before is read before the prefill, Prefilled after it (just before
	// the workers start), After once the workers have stopped. On
	// miniredis Server.Before.OK is false.
	Server struct{ Before, Prefilled, After probe.ServerStats }
	// MarketBytes and ItemsBytes are MEMORY USAGE of the markets' ZSETs
	// and created-item SETs after the prefill, summed (0 if unsupported or
	// without prefill).
	MarketBytes, ItemsBytes int64
	// ClientRSS is this process's resident set size once the workers have
	// stopped (before the audit); ClientCPU the CPU time it used from the
	// workers' start until they all stopped.
	ClientRSS int64
	ClientCPU time.Duration
}

// RedisCPU is the CPU time Redis used (all masters) from the workers'
// start until they stopped; 0 when not measured.
func (r Result) RedisCPU() time.Duration {
	if !r.Server.Prefilled.OK || !r.Server.After.OK {
		return 0
	}
	return r.Server.After.CPU - r.Server.Prefilled.CPU
}

// RedisCommands is how many commands Redis processed (all masters) from
// the workers' start until they stopped; 0 when not measured.
func (r Result) RedisCommands() int64 {
	if !r.Server.Prefilled.OK || !r.Server.After.OK {
		return 0
	}
	return r.Server.After.Commands - r.Server.Prefilled.Commands
}

// PrefillBytesPerListing is the growth of Redis's used_memory during the
// prefill per listing created; ok is false without prefill or figures.
func (r Result) PrefillBytesPerListing() (v float64, ok bool) {
	n := r.Prefill * max(len(r.Markets), 1)
	if n == 0 || !r.Server.Before.OK || !r.Server.Prefilled.OK {
		return 0, false
	}
	return float64(r.Server.Prefilled.UsedMemory-r.Server.Before.UsedMemory) / float64(n), true
}

// OpsPerSecond is (listed + bought) per second of Elapsed.
func (r Result) OpsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Listed+r.Bought) / r.Elapsed.Seconds()
}

// BoughtPerSecond is bought per second of Elapsed.
func (r Result) BoughtPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bought) / r.Elapsed.Seconds()
}

// RetriesPerPurchase is Retries per bought item; ok is false when nothing
// was bought.
func (r Result) RetriesPerPurchase() (v float64, ok bool) {
	if r.Bought == 0 {
		return 0, false
	}
	return float64(r.Retries) / float64(r.Bought), true
}

// live holds the counters workers update while running.
type live struct {
	listed, bought, failed, retries atomic.Int64
}

// worker is one lister's or buyer's private tally, merged after it stops.
type worker struct {
	listed, failedLists, listRetries, listLockWaits int64
	bought, retries, lockWaits, lockLost, empty     int64
	failed                                          Failures
	wait                                            latency.Histogram
	firstErr                                        error
}

// Run runs one cell: it creates the market's users, starts the workers,
// stops them after cfg.Duration or when ctx ends (whichever is first),
// waits for every one of them, audits the market and deletes its keys.
//
// Operations are never cancelled half-way: workers check for the stop
// signal between operations, and each operation runs under a context
// that ctx's end does not cancel (the market bounds each operation's time
// itself). A cancelled operation could apply in Redis yet be reported as
// failed, and the audit, which checks Redis against the operations the
// market acknowledged, would then see a violation that did not happen.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	if cfg.Client == nil {
		return Result{}, fmt.Errorf("%w: no client", ErrConfig)
	}
	if _, err := market.ParseStrategy(string(cfg.Strategy)); err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sc := cfg.Scenario
	if sc.Listers < 1 || sc.Buyers < 1 || sc.Listers > MaxWorkers || sc.Buyers > MaxWorkers {
		return Result{}, fmt.Errorf("%w: scenario %s", ErrConfig, sc)
	}
	if cfg.Duration <= 0 {
		return Result{}, fmt.Errorf("%w: duration %v must be positive", ErrConfig, cfg.Duration)
	}
	if cfg.Pick == 0 {
		cfg.Pick = DefaultPick
	}
	if cfg.Pick < 1 {
		return Result{}, fmt.Errorf("%w: pick %d must be at least 1", ErrConfig, cfg.Pick)
	}
	if cfg.Markets == 0 {
		cfg.Markets = max(1, len(cfg.Names))
	}
	if cfg.Markets < 1 || cfg.Markets > MaxMarkets {
		return Result{}, fmt.Errorf("%w: markets %d must be between 1 and %d", ErrConfig, cfg.Markets, MaxMarkets)
	}
	if len(cfg.Names) > 0 && len(cfg.Names) != cfg.Markets {
		return Result{}, fmt.Errorf("%w: %d names for %d markets", ErrConfig, len(cfg.Names), cfg.Markets)
	}
	if cfg.Prefill < 0 || cfg.Prefill > MaxPrefill {
		return Result{}, fmt.Errorf("%w: prefill %d must be between 0 and %d", ErrConfig, cfg.Prefill, MaxPrefill)
	}
	if cfg.Name == "" {
		cfg.Name = "sim-" + uuid.NewString()[:8]
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 250 * time.Millisecond
	}
	// Set-up, audit and clean-up finish even if ctx ends: a cell that
	// started is always completed and accounted for.
	bg := context.WithoutCancel(ctx)
	names := cfg.Names
	if len(names) == 0 {
		if cfg.Markets == 1 {
			names = []string{cfg.Name}
		} else if names, err = SpreadNames(bg, cfg.Client, cfg.Name, cfg.Markets); err != nil {
			return Result{}, err
		}
	}
	markets := make([]*market.Market, len(names))
	for i, name := range names {
		// Each market keeps a ledger for the length of the cell, so the
		// audit checks every sale.
		opts := append([]market.Option{market.WithLedger(market.NewLedger())}, cfg.MarketOptions...)
		m, err := market.New(cfg.Client, name, opts...)
		if err != nil {
			return Result{}, err
		}
		if n, err := cfg.Client.Exists(bg, m.Keys().UserIDs(), m.Keys().Market()).Result(); err != nil {
			return Result{}, err
		} else if n > 0 {
			return Result{}, fmt.Errorf("%w: market %s already has keys", ErrConfig, name)
		}
		markets[i] = m
	}
	res = Result{Scenario: sc, Strategy: cfg.Strategy, Market: names[0], Duration: cfg.Duration, Wait: &latency.Histogram{},
		Markets: names, Prefill: cfg.Prefill}
	if !cfg.KeepKeys {
		defer func() {
			for _, name := range names {
				if derr := DeleteMarket(bg, cfg.Client, name); derr != nil && err == nil {
					err = fmt.Errorf("delete keys of market %s: %w", name, derr)
				}
			}
		}()
	}

	listers := make([]string, sc.Listers)
	buyers := make([]string, sc.Buyers)
	for i := range listers {
		listers[i] = "L" + strconv.Itoa(i)
	}
	for i := range buyers {
		buyers[i] = "B" + strconv.Itoa(i)
	}
	for _, m := range markets {
		for i, id := range listers {
			if _, err := m.CreateUser(bg, id, "lister "+strconv.Itoa(i), 0); err != nil {
				return res, fmt.Errorf("create lister: %w", err)
			}
		}
		for i, id := range buyers {
			if _, err := m.CreateUser(bg, id, "buyer "+strconv.Itoa(i), BuyerFunds); err != nil {
				return res, fmt.Errorf("create buyer: %w", err)
			}
		}
	}
	if cfg.Prefill > 0 {
		probe.WaitLazyFree(bg, cfg.Client)
		res.Server.Before, _ = probe.ReadServerStats(bg, cfg.Client)
		began := time.Now()
		for _, m := range markets {
			if err := prefill(bg, m, cfg.Prefill); err != nil {
				return res, fmt.Errorf("prefill market %s: %w", m.Name(), err)
			}
		}
		res.PrefillTime = time.Since(began)
		for _, m := range markets {
			res.MarketBytes += probe.KeyMemory(bg, cfg.Client, m.Keys().Market())
			res.ItemsBytes += probe.KeyMemory(bg, cfg.Client, m.Keys().Items())
		}
	}
	res.Server.Prefilled, _ = probe.ReadServerStats(bg, cfg.Client)
	cpu0 := probe.ProcessCPU()

	var lv live
	stop := make(chan struct{})
	perMarket := sc.Listers + sc.Buyers
	tallies := make([]*worker, perMarket*len(markets))
	var wg sync.WaitGroup
	start := time.Now()
	for j, m := range markets {
		stream := uint64(j) << 40 // market 0 keeps the single-market streams
		for i, id := range listers {
			w := &worker{}
			tallies[j*perMarket+i] = w
			rng := rand.New(rand.NewPCG(cfg.Seed, stream+uint64(i)))
			wg.Go(func() { w.list(bg, m, cfg.Strategy, id, rng, stop, &lv) })
		}
		for i, id := range buyers {
			w := &worker{}
			tallies[j*perMarket+sc.Listers+i] = w
			rng := rand.New(rand.NewPCG(cfg.Seed, stream+uint64(1<<32+i)))
			wg.Go(func() { w.buy(bg, m, cfg.Strategy, id, int64(cfg.Pick), rng, stop, &lv) })
		}
	}

	// The stop signal: the duration's end, or ctx's.
	timer := time.NewTimer(cfg.Duration)
	ticker := time.NewTicker(cfg.ProgressEvery)
	defer ticker.Stop()
	for stopped := false; !stopped; {
		select {
		case <-timer.C:
			stopped = true
		case <-ctx.Done():
			timer.Stop()
			res.Interrupted = true
			stopped = true
		case <-ticker.C:
			if cfg.Progress != nil {
				cfg.Progress(Counters{Elapsed: time.Since(start), Listed: lv.listed.Load(),
					Bought: lv.bought.Load(), Failed: lv.failed.Load(), Retries: lv.retries.Load()})
			}
		}
	}
	res.Elapsed = time.Since(start)
	close(stop)
	wg.Wait()
	res.Drain = time.Since(start) - res.Elapsed
	res.ClientCPU = probe.ProcessCPU() - cpu0
	res.Server.After, _ = probe.ReadServerStats(bg, cfg.Client)
	res.ClientRSS = probe.ProcessRSS()

	var firstErr error
	for _, w := range tallies {
		res.Listed += w.listed
		res.FailedLists += w.failedLists
		res.ListRetries += w.listRetries
		res.ListLockWaits += w.listLockWaits
		res.Bought += w.bought
		res.Retries += w.retries
		res.LockWaits += w.lockWaits
		res.LockLost += w.lockLost
		res.EmptyPolls += w.empty
		res.Failed.add(w.failed)
		res.Wait.Merge(&w.wait)
		if firstErr == nil {
			firstErr = w.firstErr
		}
	}
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	for _, m := range markets {
		rep, err := m.Audit(bg)
		if err != nil {
			return res, fmt.Errorf("audit market %s: %w", m.Name(), err)
		}
		res.Audit.Violations.Add(rep.Violations)
		res.Audit.LedgerChecked = rep.LedgerChecked
		res.Audit.Users += rep.Users
		res.Audit.Items += rep.Items
		res.Audit.Listings += rep.Listings
		for _, d := range rep.Details {
			if len(res.Audit.Details) < 20 {
				if len(markets) > 1 {
					d = m.Name() + ": " + d
				}
				res.Audit.Details = append(res.Audit.Details, d)
			}
		}
	}
	return res, nil
}

// prefill fills m with n listings of PrefillSeller, PrefillBatch at a time.
func prefill(ctx context.Context, m *market.Market, n int) error {
	if _, err := m.CreateUser(ctx, PrefillSeller, "filler seller", 0); err != nil {
		return err
	}
	items := make([]string, 0, PrefillBatch)
	prices := make([]int64, 0, PrefillBatch)
	for i := 0; i < n; i++ {
		items = append(items, "P-"+strconv.Itoa(i))
		prices = append(prices, PrefillMinPrice+int64(i%1000))
		if len(items) == PrefillBatch || i == n-1 {
			if err := m.CreateListings(ctx, PrefillSeller, items, prices); err != nil {
				return err
			}
			items, prices = items[:0], prices[:0]
		}
	}
	return nil
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// pause sleeps for d or until stop, whichever is first.
func pause(d time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
}

func (w *worker) noteErr(err error) {
	if w.firstErr == nil {
		w.firstErr = err
	}
}

// list is a lister's loop: create an item, list it at a random price.
func (w *worker) list(ctx context.Context, m *market.Market, s market.Strategy, seller string, rng *rand.Rand, stop <-chan struct{}, lv *live) {
	for seq := 0; !stopped(stop); seq++ {
		item := seller + "-" + strconv.Itoa(seq)
		if err := m.GrantItem(ctx, seller, item); err != nil {
			w.noteErr(fmt.Errorf("create item %s: %w", item, err))
			pause(ErrorPause, stop)
			continue
		}
		price := MinPrice + rng.Int64N(MaxPrice-MinPrice+1)
		cost, err := m.List(ctx, s, seller, item, price)
		w.listRetries += int64(cost.Retries)
		w.listLockWaits += int64(cost.LockWaits)
		if cost.LockLost {
			w.lockLost++
		}
		if err != nil {
			w.failedLists++
			if !errors.Is(err, market.ErrContended) {
				w.noteErr(fmt.Errorf("list %s: %w", item, err))
				pause(ErrorPause, stop)
			}
			continue
		}
		w.listed++
		lv.listed.Add(1)
	}
}

// buy is a buyer's loop: read the k cheapest listings, buy one of them at
// random at its listed price.
func (w *worker) buy(ctx context.Context, m *market.Market, s market.Strategy, buyer string, k int64, rng *rand.Rand, stop <-chan struct{}, lv *live) {
	for !stopped(stop) {
		cheapest, _, err := m.Listings(ctx, 0, k)
		if err != nil {
			w.noteErr(fmt.Errorf("read listings: %w", err))
			pause(ErrorPause, stop)
			continue
		}
		if len(cheapest) == 0 {
			w.empty++
			pause(EmptyMarketPause, stop)
			continue
		}
		l := cheapest[rng.IntN(len(cheapest))]
		cost, err := m.Purchase(ctx, s, buyer, l.Seller, l.Item, l.Price)
		w.retries += int64(cost.Retries)
		w.lockWaits += int64(cost.LockWaits)
		lv.retries.Add(int64(cost.Retries))
		if cost.LockLost {
			w.lockLost++
		}
		if err == nil {
			w.bought++
			w.wait.Record(cost.Wait)
			lv.bought.Add(1)
			continue
		}
		lv.failed.Add(1)
		switch {
		case errors.Is(err, market.ErrListingNotFound):
			w.failed.ListingGone++
		case errors.Is(err, market.ErrPriceChanged):
			w.failed.PriceChanged++
		case errors.Is(err, market.ErrInsufficientFunds):
			w.failed.InsufficientFunds++
		case errors.Is(err, market.ErrContended):
			w.failed.Contended++
		default:
			w.failed.Other++
			w.noteErr(fmt.Errorf("purchase %s: %w", market.Member(l.Item, l.Seller), err))
			pause(ErrorPause, stop)
		}
	}
}
