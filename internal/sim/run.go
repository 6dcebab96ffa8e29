package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/sim/workload"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

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
	if cfg, err = cfg.withDefaults(); err != nil {
		return Result{}, err
	}
	// Set-up, audit and clean-up finish even if ctx ends: a cell that
	// started is always completed and accounted for. Only a prefill,
	// which may take minutes, stops between its batches when ctx ends,
	// and the keys it made are deleted.
	bg := context.WithoutCancel(ctx)
	names, markets, workMarkets, err := openMarkets(bg, cfg)
	if err != nil {
		return Result{}, err
	}
	res = Result{Scenario: cfg.Scenario, Strategy: cfg.Strategy, Market: names[0], Duration: cfg.Duration,
		Wait: &latency.Histogram{}, Markets: names, Prefill: cfg.Prefill}
	if !cfg.KeepKeys {
		defer func() {
			for _, m := range markets {
				if derr := m.Delete(bg); derr != nil && err == nil {
					err = fmt.Errorf("delete keys of market %s: %w", m.Name(), derr)
				}
			}
		}()
	}

	listers, buyers := workerIDs(cfg.Scenario)
	if err := createUsers(bg, markets, listers, buyers); err != nil {
		return res, err
	}
	if cfg.Prefill > 0 {
		if err := prefillMarkets(ctx, cfg, markets, &res); err != nil {
			return res, err
		}
	}
	res.Server.Prefilled, _ = probe.ReadServerStats(bg, cfg.Client)
	tallies := runWorkers(ctx, cfg, workMarkets, listers, buyers, &res)
	res.merge(tallies)
	if err := res.audit(bg, markets); err != nil {
		return res, err
	}
	return res, nil
}

// withDefaults checks cfg and fills in the defaults of its zero fields.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Client == nil {
		return cfg, fmt.Errorf("%w: no client", ErrConfig)
	}
	if _, err := market.ParseStrategy(string(cfg.Strategy)); err != nil {
		return cfg, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sc := cfg.Scenario
	if sc.Listers < 1 || sc.Buyers < 1 || sc.Listers > MaxWorkers || sc.Buyers > MaxWorkers {
		return cfg, fmt.Errorf("%w: scenario %s", ErrConfig, sc)
	}
	if cfg.Duration <= 0 {
		return cfg, fmt.Errorf("%w: duration %v must be positive", ErrConfig, cfg.Duration)
	}
	if cfg.Pick == 0 {
		cfg.Pick = DefaultPick
	}
	if cfg.Pick < 1 {
		return cfg, fmt.Errorf("%w: pick %d must be at least 1", ErrConfig, cfg.Pick)
	}
	if cfg.Markets == 0 {
		cfg.Markets = max(1, len(cfg.Names))
	}
	if cfg.Markets < 1 || cfg.Markets > MaxMarkets {
		return cfg, fmt.Errorf("%w: markets %d must be between 1 and %d", ErrConfig, cfg.Markets, MaxMarkets)
	}
	if len(cfg.Names) > 0 && len(cfg.Names) != cfg.Markets {
		return cfg, fmt.Errorf("%w: %d names for %d markets", ErrConfig, len(cfg.Names), cfg.Markets)
	}
	if cfg.Prefill < 0 || cfg.Prefill > MaxPrefill {
		return cfg, fmt.Errorf("%w: prefill %d must be between 0 and %d", ErrConfig, cfg.Prefill, MaxPrefill)
	}
	if cfg.Name == "" {
		cfg.Name = "sim-" + uuid.NewString()[:8]
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 250 * time.Millisecond
	}
	return cfg, nil
}

// openMarkets names the cell's markets (cfg.Names, or cfg.Name, or names
// spread over a cluster's masters) and opens each, refusing a market that
// already has keys: markets on cfg.Setup for the set-up, audit and
// clean-up, and work the same markets, with the same ledgers, on
// cfg.Client for the workers (the same when cfg.Setup is nil).
func openMarkets(ctx context.Context, cfg Config) (names []string, markets, work []*market.Market, err error) {
	setup := cfg.Client
	if cfg.Setup != nil {
		setup = cfg.Setup
	}
	names = cfg.Names
	if len(names) == 0 {
		if cfg.Markets == 1 {
			names = []string{cfg.Name}
		} else if names, err = SpreadNames(ctx, setup, cfg.Name, cfg.Markets); err != nil {
			return nil, nil, nil, err
		}
	}
	markets = make([]*market.Market, len(names))
	work = make([]*market.Market, len(names))
	for i, name := range names {
		// Each market keeps a ledger for the length of the cell, so the
		// audit checks every sale.
		opts := append([]market.Option{market.WithLedger(market.NewLedger())}, cfg.MarketOptions...)
		m, err := market.New(setup, name, opts...)
		if err != nil {
			return nil, nil, nil, err
		}
		if n, err := setup.Exists(ctx, markettrace.KeysOf(m).UserIDs(), markettrace.KeysOf(m).Market()).Result(); err != nil {
			return nil, nil, nil, err
		} else if n > 0 {
			return nil, nil, nil, fmt.Errorf("%w: market %s already has keys", ErrConfig, name)
		}
		markets[i], work[i] = m, m
		if setup != cfg.Client {
			if work[i], err = market.New(cfg.Client, name, opts...); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	return names, markets, work, nil
}

// workerIDs returns the user IDs of a scenario's listers (L0, L1, ...)
// and buyers (B0, B1, ...).
func workerIDs(sc Scenario) (listers, buyers []string) {
	listers = make([]string, sc.Listers)
	buyers = make([]string, sc.Buyers)
	for i := range listers {
		listers[i] = "L" + strconv.Itoa(i)
	}
	for i := range buyers {
		buyers[i] = "B" + strconv.Itoa(i)
	}
	return listers, buyers
}

// createUsers creates the listers, without funds, and the buyers, with
// BuyerFunds, in every market.
func createUsers(ctx context.Context, markets []*market.Market, listers, buyers []string) error {
	for _, m := range markets {
		for i, id := range listers {
			if _, err := m.CreateUser(ctx, id, "lister "+strconv.Itoa(i), 0); err != nil {
				return fmt.Errorf("create lister: %w", err)
			}
		}
		for i, id := range buyers {
			if _, err := m.CreateUser(ctx, id, "buyer "+strconv.Itoa(i), BuyerFunds); err != nil {
				return fmt.Errorf("create buyer: %w", err)
			}
		}
	}
	return nil
}

// prefillMarkets fills every market with cfg.Prefill listings and records
// in res the time it took, Redis's counters before it, and the memory of
// the markets' keys after it. It stops with ctx's error between batches
// once ctx has ended.
func prefillMarkets(ctx context.Context, cfg Config, markets []*market.Market, res *Result) error {
	stop, ctx := ctx, context.WithoutCancel(ctx)
	probe.WaitLazyFree(ctx, cfg.Client)
	res.Server.Before, _ = probe.ReadServerStats(ctx, cfg.Client)
	began := time.Now()
	total := cfg.Prefill * len(markets)
	for i, m := range markets {
		report := func(n int) {
			if cfg.PrefillProgress != nil {
				cfg.PrefillProgress(i*cfg.Prefill+n, total)
			}
		}
		if err := prefill(ctx, stop, m, cfg.Prefill, report); err != nil {
			return fmt.Errorf("prefill market %s: %w", m.Name(), err)
		}
	}
	res.PrefillTime = time.Since(began)
	for _, m := range markets {
		res.MarketBytes += probe.KeyMemory(ctx, cfg.Client, markettrace.KeysOf(m).Market())
		res.ItemsBytes += probe.KeyMemory(ctx, cfg.Client, markettrace.KeysOf(m).Items())
	}
	return nil
}

// prefill fills m with n listings of PrefillSeller, PrefillBatch at a
// time, calling done with the count created after each batch; it stops
// with stop's error between batches once stop has ended.
func prefill(ctx, stop context.Context, m *market.Market, n int, done func(int)) error {
	if _, err := m.CreateUser(ctx, PrefillSeller, "filler seller", 0); err != nil {
		return err
	}
	items := make([]string, 0, PrefillBatch)
	prices := make([]int64, 0, PrefillBatch)
	for i := 0; i < n; i++ {
		items = append(items, "P-"+strconv.Itoa(i))
		prices = append(prices, PrefillMinPrice+int64(i%1000))
		if len(items) == PrefillBatch || i == n-1 {
			if err := stop.Err(); err != nil {
				return err
			}
			if err := m.CreateListings(ctx, PrefillSeller, items, prices); err != nil {
				return err
			}
			done(i + 1)
			items, prices = items[:0], prices[:0]
		}
	}
	return nil
}

// runWorkers starts every market's listers and buyers, stops them when
// cfg.Duration has passed or ctx ends, waits for all of them, and records
// in res the times and the client's and Redis's costs. It returns every
// worker's tally.
func runWorkers(ctx context.Context, cfg Config, markets []*market.Market, listers, buyers []string, res *Result) []*worker {
	bg := context.WithoutCancel(ctx)
	cpu0 := probe.ProcessCPU()
	var lv live
	stop := make(chan struct{})
	perMarket := len(listers) + len(buyers)
	tallies := make([]*worker, perMarket*len(markets))
	var wg sync.WaitGroup
	start := time.Now()
	load := workload.Shape{MinPrice: MinPrice, MaxPrice: MaxPrice, Pick: cfg.Pick,
		EmptyPause: EmptyMarketPause, ErrorPause: ErrorPause}
	for j, m := range markets {
		stream := uint64(j) << 40 // market 0 keeps the single-market streams
		for i, id := range listers {
			w := &worker{}
			tallies[j*perMarket+i] = w
			rng := rand.New(rand.NewPCG(cfg.Seed, stream+uint64(i)))
			o := ops{w: w, m: m, s: cfg.Strategy, id: id, lv: &lv}
			wg.Go(func() { load.List(bg, o, rng, stop) })
		}
		for i, id := range buyers {
			w := &worker{}
			tallies[j*perMarket+len(listers)+i] = w
			rng := rand.New(rand.NewPCG(cfg.Seed, stream+uint64(1<<32+i)))
			o := ops{w: w, m: m, s: cfg.Strategy, id: id, lv: &lv}
			wg.Go(func() { load.Buy(w.traced(bg), o, rng, stop) })
		}
	}

	res.Interrupted = waitForStop(ctx, cfg, start, &lv)
	res.Elapsed = time.Since(start)
	close(stop)
	wg.Wait()
	res.Drain = time.Since(start) - res.Elapsed
	res.ClientCPU = probe.ProcessCPU() - cpu0
	res.Server.After, _ = probe.ReadServerStats(bg, cfg.Client)
	res.ClientRSS = probe.ProcessRSS()
	return tallies
}

// waitForStop returns when cfg.Duration has passed since start (false)
// or ctx has ended (true), calling cfg.Progress every cfg.ProgressEvery
// meanwhile.
func waitForStop(ctx context.Context, cfg Config, start time.Time, lv *live) (interrupted bool) {
	timer := time.NewTimer(cfg.Duration)
	ticker := time.NewTicker(cfg.ProgressEvery)
	defer ticker.Stop()
	for {
		select {
		case <-timer.C:
			return false
		case <-ctx.Done():
			timer.Stop()
			return true
		case <-ticker.C:
			if cfg.Progress != nil {
				cfg.Progress(Counters{Elapsed: time.Since(start), Listed: lv.listed.Load(),
					Bought: lv.bought.Load(), Failed: lv.failed.Load(), Retries: lv.retries.Load(),
					LockWaits: lv.lockWaits.Load(), Wait: lv.waits()})
			}
		}
	}
}

// merge adds the workers' tallies to r.
func (r *Result) merge(tallies []*worker) {
	var firstErr error
	for _, w := range tallies {
		r.Listed += w.listed
		r.FailedLists += w.failedLists
		r.ListRetries += w.listRetries
		r.ListLockWaits += w.listLockWaits
		r.Bought += w.bought
		r.Retries += w.retries
		r.LockWaits += w.lockWaits
		r.Execs += w.execs
		r.Window += w.window
		r.LockLost += w.lockLost
		r.EmptyPolls += w.empty
		r.Failed.add(w.failed)
		r.Wait.Merge(&w.wait)
		if firstErr == nil {
			firstErr = w.firstErr
		}
	}
	if firstErr != nil {
		r.FirstError = firstErr.Error()
	}
}

// audit audits every market and adds the reports to r.Audit, keeping the
// first 20 details (prefixed with the market's name when there are
// several markets).
func (r *Result) audit(ctx context.Context, markets []*market.Market) error {
	for _, m := range markets {
		rep, err := auditMarket(ctx, m)
		if err != nil {
			return fmt.Errorf("audit market %s: %w", m.Name(), err)
		}
		r.Audit.Violations.Add(rep.Violations)
		r.Audit.LedgerChecked = rep.LedgerChecked
		r.Audit.Users += rep.Users
		r.Audit.Items += rep.Items
		r.Audit.Listings += rep.Listings
		for _, d := range rep.Details {
			if len(r.Audit.Details) < 20 {
				if len(markets) > 1 {
					d = m.Name() + ": " + d
				}
				r.Audit.Details = append(r.Audit.Details, d)
			}
		}
	}
	return nil
}

// auditTries is how many times a market's audit is asked for while its
// reply times out: the audit only reads, and a busy machine can hold a
// large market's reply (a prefilled one's) past the client's read
// timeout.
const auditTries = 3

// auditMarket audits m, asking again when the reply timed out.
func auditMarket(ctx context.Context, m *market.Market) (market.Report, error) {
	var ne net.Error
	for try := 1; ; try++ {
		rep, err := m.Audit(ctx)
		if err == nil || try == auditTries || ctx.Err() != nil || !errors.As(err, &ne) || !ne.Timeout() {
			return rep, err
		}
	}
}
