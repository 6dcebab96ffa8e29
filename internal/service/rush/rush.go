// Package rush runs the service's rush (POST /api/rush): each strategy in
// turn in a fresh market of its own, buyers and listers running the
// simulator's load (internal/sim) against it, with live figures. The HTTP
// service reaches it through a small interface of its own, so that it does
// not depend on the simulator.
package rush

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/netdelay"
	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/report"
	"github.com/lockmarket/lockmarket/internal/service/jobs"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/latency"
	"github.com/lockmarket/lockmarket/market"
)

// How a rush is measured.
const (
	rushRTTSamples      = 200 // PINGs that measure the round trip, at most
	rushProgressEvery   = 250 * time.Millisecond
	rushSeriesMaxPoints = 400
)

// Time bounds of a rush.
const (
	// rushRTTBudget bounds the time the round trip's measurement takes:
	// fewer PINGs when the round trip is long (at least 3).
	rushRTTBudget = time.Second
	// rushGrace is what a rush may take beyond its duration: the round
	// trip's measurement, and each strategy's set-up, drain, audit and
	// clean-up. A rush still running then is stopped, as DELETE stops it.
	rushGrace = 15 * time.Second
)

// Status is the answer of GET /api/rush: the last rush, live while it
// runs.
type Status struct {
	ID    string `json:"id,omitempty"`
	State string `json:"state"`
	// Buyers and Listers run in each strategy's market.
	Buyers  int `json:"buyers"`
	Listers int `json:"listers"`
	// DurationMS is the whole rush; each strategy runs for
	// StrategyDurationMS of it, one after the other.
	DurationMS         float64 `json:"duration_ms"`
	StrategyDurationMS float64 `json:"strategy_duration_ms"`
	// RTTMS is the round trip added to every command (0: none), through a
	// delay proxy in the service (internal/redis/netdelay); MeasuredRTTMS the
	// PING median through the rush's clients, measured before it starts.
	RTTMS         float64 `json:"rtt_ms"`
	MeasuredRTTMS float64 `json:"measured_rtt_ms"`
	Redis         string  `json:"redis"`
	// LoadStart and LoadEnd are the machine's load when the rush started
	// and when it ended (absent where the OS reports none, LoadEnd while
	// it runs): on a busy machine one rush's figures move from run to run.
	LoadStart  *report.Load     `json:"load_start,omitempty"`
	LoadEnd    *report.Load     `json:"load_end,omitempty"`
	Error      string           `json:"error,omitempty"`
	Strategies []StrategyStatus `json:"strategies"`
}

// StrategyStatus is one strategy's run in its own fresh market.
type StrategyStatus struct {
	Strategy  market.Strategy `json:"strategy"`
	State     string          `json:"state"`
	Market    string          `json:"market"`
	ElapsedMS float64         `json:"elapsed_ms"`
	Listed    int64           `json:"listed"`
	Bought    int64           `json:"bought"`
	// Failed counts purchases that did not buy (the listing was gone, the
	// lock or transaction could not be had in time, ...).
	Failed int64 `json:"failed"`
	// LostToAnotherBuyer counts the failed purchases whose listing another
	// buyer had bought (or the lister repriced) first: the market working,
	// not an error. Until the strategy is done, when the failures are told
	// apart, it is every failed purchase.
	LostToAnotherBuyer int64   `json:"lost_to_another_buyer"`
	PurchasesPerS      float64 `json:"purchases_per_s"`
	// Retries are EXECs aborted by WATCH during purchases; LockWaits
	// failed lock attempts before a purchase held its lock.
	Retries              int64   `json:"retries"`
	RetriesPerPurchase   float64 `json:"retries_per_purchase"`
	LockWaits            int64   `json:"lock_waits"`
	LockWaitsPerPurchase float64 `json:"lock_waits_per_purchase"`
	// WaitSamples is how many successful purchases the wait figures are
	// taken from.
	WaitSamples uint64  `json:"wait_samples"`
	MeanWaitMS  float64 `json:"mean_wait_ms"`
	P50WaitMS   float64 `json:"p50_wait_ms"`
	P99WaitMS   float64 `json:"p99_wait_ms"`
	// Failures and AuditViolations are known once the strategy is done.
	Failures        *sim.Failures `json:"failures,omitempty"`
	AuditViolations int           `json:"audit_violations"`
	// Series is purchases per second over time, one point per interval.
	Series []Point `json:"series"`
}

type Point struct {
	TMS           float64 `json:"t_ms"`
	PurchasesPerS float64 `json:"purchases_per_s"`
}

// Runner runs one rush at a time in the background; Close stops it.
type Runner struct {
	rdb   redis.UniversalClient
	mini  bool
	redis string
	log   *slog.Logger

	ctx      context.Context // ends when the runner closes
	closeAll context.CancelFunc
	wg       sync.WaitGroup

	mu      sync.Mutex
	running bool
	status  Status
	cancel  context.CancelFunc
	done    chan struct{}
}

// New returns a Runner whose rushes run on rdb (each client of a rush a
// connection of its own). mini says rdb is an embedded miniredis, whose
// WATCH the rush's clients then make behave as a real server's; redis
// names the Redis for the status; log receives the start and end of each
// rush (nil: discard).
func New(rdb redis.UniversalClient, mini bool, redis string, log *slog.Logger) *Runner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{rdb: rdb, mini: mini, redis: redis, log: log, ctx: ctx, closeAll: cancel}
}

// Close stops the running rush and waits for it to end. Start is refused
// after Close.
func (r *Runner) Close() {
	r.closeAll()
	r.wg.Wait()
}

// snapshot returns a copy of the status, safe to encode.
func (r *Runner) snapshot() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshotLocked()
}

// snapshotLocked is snapshot with r.mu held.
func (r *Runner) snapshotLocked() Status {
	st := r.status
	if st.State == "" {
		st.State = jobs.StateIdle
	}
	st.Strategies = slices.Clone(st.Strategies)
	for i := range st.Strategies {
		st.Strategies[i].Series = slices.Clone(st.Strategies[i].Series)
	}
	if st.Strategies == nil {
		st.Strategies = []StrategyStatus{}
	}
	return st
}

// update changes strategy i's figures under the lock.
func (r *Runner) update(i int, f func(s *StrategyStatus)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.status.Strategies[i])
}

// Start starts a rush of cfg in the background and returns its Status;
// it fails with jobs.ErrBusy while another rush runs and with
// jobs.ErrClosed after Close. Each strategy runs in a fresh market of its
// own for an equal part of cfg.Duration.
func (r *Runner) Start(cfg jobs.RushConfig) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return nil, jobs.ErrBusy
	}
	if r.ctx.Err() != nil {
		return nil, jobs.ErrClosed
	}
	id := jobs.NewID()
	per := cfg.Duration / time.Duration(len(cfg.Strategies))
	st := Status{ID: id, State: jobs.StateRunning, Buyers: cfg.Buyers, Listers: cfg.Listers,
		DurationMS: latency.Milliseconds(cfg.Duration), StrategyDurationMS: latency.Milliseconds(per),
		RTTMS: latency.Milliseconds(cfg.RTT), Redis: r.redis}
	load := probe.ReadLoad()
	st.LoadStart = report.NewLoad(load, probe.Load{})
	for _, strat := range cfg.Strategies {
		st.Strategies = append(st.Strategies, StrategyStatus{Strategy: strat, State: jobs.StatePending,
			Market: fmt.Sprintf("rush-%s-%s", id, strat), Series: []Point{}})
	}
	ctx, cancel := context.WithCancel(r.ctx)
	r.running, r.status, r.cancel, r.done = true, st, cancel, make(chan struct{})
	done := r.done
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(done)
		defer cancel()
		r.run(ctx, cfg, per, load)
	}()
	r.log.Info("rush started", slog.String("id", id), slog.Int("buyers", cfg.Buyers),
		slog.Float64("duration_ms", latency.Milliseconds(cfg.Duration)))
	return r.snapshotLocked(), nil
}

// Status is the last rush's Status ("state": "idle" before the first).
func (r *Runner) Status() any { return r.snapshot() }

// Cancel stops the running rush (its operations in flight finish, its
// markets are audited and deleted) and returns its final Status; without
// a running rush, the last Status.
func (r *Runner) Cancel(ctx context.Context) (any, error) {
	r.mu.Lock()
	running, cancel, done := r.running, r.cancel, r.done
	r.mu.Unlock()
	if running {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.snapshot(), nil
}

// run runs each strategy in turn with sim.Run: a fresh market, the
// listers refilling it, the buyers buying among the cheapest listings;
// with a round trip, every client's connections go through a delay proxy.
// load is the machine's load at the start, from which the end's is told.
func (r *Runner) run(ctx context.Context, cfg jobs.RushConfig, per time.Duration, load probe.Load) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration+rushGrace)
	defer cancel()
	final, failure := jobs.StateDone, ""
	fail := func(err error) {
		if ctx.Err() != nil {
			final = jobs.StateCancelled // stopped, not failed
			return
		}
		r.log.Warn("rush failed", slog.Any("err", err))
		final, failure = jobs.StateFailed, err.Error()
	}
	var hooks []redis.Hook
	if r.mini {
		hooks = append(hooks, redisconn.MiniWatchHook{}) // WATCH as a real server does it
	}
	var dial redisconn.Dial
	if cfg.RTT > 0 {
		d, err := netdelay.NewDialer(cfg.RTT)
		if err != nil {
			fail(err)
			cfg.Strategies = nil
		} else {
			defer d.Close()
			dial = d.Dial
		}
	}
	rdb := redisconn.SizedClientDialing(r.rdb, cfg.Buyers+cfg.Listers+4, dial, hooks...)
	if rdb != r.rdb {
		defer rdb.Close()
	}
	if len(cfg.Strategies) > 0 {
		if rtt, err := netdelay.MeasureRTT(ctx, rdb, rushSamples(cfg.RTT)); err != nil {
			fail(fmt.Errorf("measuring the round trip: %w", err))
			cfg.Strategies = nil
		} else {
			r.mu.Lock()
			r.status.MeasuredRTTMS = latency.Milliseconds(rtt)
			r.mu.Unlock()
		}
	}
	for i, strat := range cfg.Strategies {
		if ctx.Err() != nil {
			r.update(i, func(x *StrategyStatus) { x.State = jobs.StateCancelled })
			final = jobs.StateCancelled
			continue
		}
		r.update(i, func(x *StrategyStatus) { x.State = jobs.StateRunning })
		var last sim.Counters
		name := r.snapshot().Strategies[i].Market
		res, err := sim.Run(ctx, sim.Config{
			// The set-up, audit and clean-up go straight to Redis: only
			// the workers' operations pay the added round trip.
			Client: rdb, Setup: r.rdb, Scenario: sim.Scenario{Listers: cfg.Listers, Buyers: cfg.Buyers},
			Strategy: strat, Duration: per, Seed: 1, Name: name, ProgressEvery: rushProgressEvery,
			Progress: func(c sim.Counters) {
				dt := c.Elapsed - last.Elapsed
				rate := 0.0
				if dt > 0 {
					rate = float64(c.Bought-last.Bought) / dt.Seconds()
				}
				last = c
				r.update(i, func(x *StrategyStatus) {
					x.live(c)
					if len(x.Series) < rushSeriesMaxPoints {
						x.Series = append(x.Series, Point{TMS: latency.Milliseconds(c.Elapsed), PurchasesPerS: rate})
					}
				})
			},
		})
		if err != nil {
			r.update(i, func(x *StrategyStatus) { x.State = jobs.StateFailed })
			fail(fmt.Errorf("%s: %w", strat, err))
			break
		}
		r.update(i, func(x *StrategyStatus) {
			x.live(sim.Counters{Elapsed: res.Elapsed, Listed: res.Listed, Bought: res.Bought,
				Failed: res.Failed.Total(), Retries: res.Retries, LockWaits: res.LockWaits, Wait: res.Wait})
			f := res.Failed
			x.Failures = &f
			x.LostToAnotherBuyer = f.ListingNotFound + f.PriceChanged
			x.AuditViolations = res.Audit.Total()
			x.State = jobs.StateDone
			if res.Interrupted {
				x.State = jobs.StateCancelled
			}
		})
		if res.Interrupted {
			final = jobs.StateCancelled
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && failure == "" {
		failure = fmt.Sprintf("stopped at the rush's time bound (its duration and %v)", rushGrace)
	}
	r.mu.Lock()
	r.running = false
	r.status.State, r.status.Error = final, failure
	r.status.LoadEnd = report.NewLoad(probe.ReadLoad(), load)
	for i := range r.status.Strategies {
		if x := &r.status.Strategies[i]; x.State == jobs.StatePending {
			x.State = final // never started: the rush failed or was cancelled first
		}
	}
	r.mu.Unlock()
	r.log.Info("rush ended", slog.String("state", final))
}

// live sets the figures from a cell's counters.
func (x *StrategyStatus) live(c sim.Counters) {
	x.ElapsedMS = latency.Milliseconds(c.Elapsed)
	x.Listed, x.Bought, x.Failed, x.Retries, x.LockWaits = c.Listed, c.Bought, c.Failed, c.Retries, c.LockWaits
	x.LostToAnotherBuyer = c.Failed
	if c.Elapsed > 0 {
		x.PurchasesPerS = float64(c.Bought) / c.Elapsed.Seconds()
	}
	if c.Bought > 0 {
		x.RetriesPerPurchase = float64(c.Retries) / float64(c.Bought)
		x.LockWaitsPerPurchase = float64(c.LockWaits) / float64(c.Bought)
	}
	if c.Wait != nil && c.Wait.Count() > 0 {
		x.WaitSamples = c.Wait.Count()
		x.MeanWaitMS = latency.Milliseconds(c.Wait.Mean())
		x.P50WaitMS = latency.Milliseconds(c.Wait.Quantile(0.50))
		x.P99WaitMS = latency.Milliseconds(c.Wait.Quantile(0.99))
	}
}

// rushSamples is how many PINGs measure a round trip of about rtt within
// rushRTTBudget: rushRTTSamples at most, 3 at least.
func rushSamples(rtt time.Duration) int {
	if rtt <= 0 {
		return rushRTTSamples
	}
	return int(min(rushRTTSamples, max(3, int64(rushRTTBudget/rtt))))
}
