// Package sim is the simulator's engine: it runs one cell (a scenario of
// listers and buyers under one strategy, for a duration) against a fresh
// market, measures every operation, stops cleanly, and audits the market.
//
// The workload (package internal/sim/workload, which the fault runs use
// too), which the book does not publish and is therefore ours: each
// lister loops "create a new item in its own inventory, list it at a
// random price"; each buyer loops "read the K cheapest listings, pick one
// at random, buy it at its listed price". Buyers start with funds they
// cannot spend in any run this engine allows, and money is never added, so
// the audit can check that it is conserved.
package sim

import (
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/report/latency"
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
	// Setup, if set, carries the cell's set-up, audit and clean-up, and
	// Client only its workers' operations: a Client through a delayed link
	// then does not make the set-up pay the delay once per user created
	// (default Client).
	Setup redis.UniversalClient
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
	// PrefillProgress, if set, is called after each batch of the prefill
	// with the listings created so far and the total to create (over
	// every market of the cell).
	PrefillProgress func(done, total int)
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
	Elapsed   time.Duration
	Listed    int64
	Bought    int64
	Failed    int64
	Retries   int64
	LockWaits int64
	// Wait holds the wall time of every successful purchase so far (a
	// copy, the caller's to keep).
	Wait *latency.Histogram
}

// Failures counts failed purchases by reason. A failure is an operation
// that ended without buying; WATCH retries inside an operation that
// eventually bought are not failures.
type Failures struct {
	// ListingNotFound: the listing had been bought (or never existed) by
	// the time the purchase ran.
	ListingNotFound int64 `json:"listing_not_found"`
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
	return f.ListingNotFound + f.PriceChanged + f.InsufficientFunds + f.Contended + f.Other
}

func (f *Failures) add(o Failures) {
	f.ListingNotFound += o.ListingNotFound
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
	// Execs and Window are the EXECs the Watch strategy sent for all
	// Purchase calls and the sum of their conflict windows, as the
	// market's trace reports them (markettrace.Trace.Exec; see Conflict).
	Execs  int64
	Window time.Duration
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
