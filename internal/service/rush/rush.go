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
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/report"
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
	status  api.RushStatus
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
func (r *Runner) snapshot() api.RushStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshotLocked()
}

// snapshotLocked is snapshot with r.mu held.
func (r *Runner) snapshotLocked() api.RushStatus {
	st := r.status
	if st.State == "" {
		st.State = api.StateIdle
	}
	st.Strategies = slices.Clone(st.Strategies)
	for i := range st.Strategies {
		st.Strategies[i].Series = slices.Clone(st.Strategies[i].Series)
	}
	if st.Strategies == nil {
		st.Strategies = []api.RushStrategy{}
	}
	return st
}

// update changes strategy i's figures under the lock.
func (r *Runner) update(i int, f func(s *api.RushStrategy)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.status.Strategies[i])
}

// Start starts a rush of cfg in the background and returns its status;
// it fails with api.ErrBusy while another rush runs and with
// api.ErrClosed after Close. Each strategy runs in a fresh market of its
// own for an equal part of cfg.Duration.
func (r *Runner) Start(cfg api.RushConfig) (api.RushStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return api.RushStatus{}, api.ErrBusy
	}
	if r.ctx.Err() != nil {
		return api.RushStatus{}, api.ErrClosed
	}
	id := api.NewID()
	per := cfg.Duration / time.Duration(len(cfg.Strategies))
	st := api.RushStatus{ID: id, State: api.StateRunning, Buyers: cfg.Buyers, Listers: cfg.Listers,
		DurationMS: latency.Milliseconds(cfg.Duration), StrategyDurationMS: latency.Milliseconds(per),
		RTTMS: latency.Milliseconds(cfg.RTT), Redis: r.redis}
	load := probe.ReadLoad()
	st.LoadStart = report.NewLoad(load, probe.Load{})
	for _, strat := range cfg.Strategies {
		st.Strategies = append(st.Strategies, api.RushStrategy{Strategy: strat, State: api.StatePending,
			Market: fmt.Sprintf("rush-%s-%s", id, strat), Series: []api.RushPoint{}})
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

// Status is the last rush's status ("state": "idle" before the first).
func (r *Runner) Status() api.RushStatus { return r.snapshot() }

// Cancel stops the running rush (its operations in flight finish, its
// markets are audited and deleted) and returns its final status; without
// a running rush, the last status.
func (r *Runner) Cancel(ctx context.Context) (api.RushStatus, error) {
	r.mu.Lock()
	running, cancel, done := r.running, r.cancel, r.done
	r.mu.Unlock()
	if running {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			return api.RushStatus{}, ctx.Err()
		}
	}
	return r.snapshot(), nil
}

// run runs each strategy in turn with sim.Run: a fresh market, the
// listers refilling it, the buyers buying among the cheapest listings;
// with a round trip, every client's connections go through a delay proxy.
// load is the machine's load at the start, from which the end's is told.
func (r *Runner) run(ctx context.Context, cfg api.RushConfig, per time.Duration, load probe.Load) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration+rushGrace)
	defer cancel()
	final, failure := api.StateDone, ""
	fail := func(err error) {
		if ctx.Err() != nil {
			final = api.StateCancelled // stopped, not failed
			return
		}
		r.log.Warn("rush failed", slog.Any("err", err))
		final, failure = api.StateFailed, err.Error()
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
			r.update(i, func(x *api.RushStrategy) { x.State = api.StateCancelled })
			final = api.StateCancelled
			continue
		}
		r.update(i, func(x *api.RushStrategy) { x.State = api.StateRunning })
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
				r.update(i, func(x *api.RushStrategy) {
					live(x, c)
					if len(x.Series) < rushSeriesMaxPoints {
						x.Series = append(x.Series, api.RushPoint{TMS: latency.Milliseconds(c.Elapsed), PurchasesPerS: rate})
					}
				})
			},
		})
		if err != nil {
			r.update(i, func(x *api.RushStrategy) { x.State = api.StateFailed })
			fail(fmt.Errorf("%s: %w", strat, err))
			break
		}
		r.update(i, func(x *api.RushStrategy) {
			live(x, sim.Counters{Elapsed: res.Elapsed, Listed: res.Listed, Bought: res.Bought,
				Failed: res.Failed.Total(), Retries: res.Retries, LockWaits: res.LockWaits, Wait: res.Wait})
			f := res.Failed
			x.Failures = &f
			x.LostToAnotherBuyer = f.ListingNotFound + f.PriceChanged
			x.AuditViolations = res.Audit.Total()
			x.State = api.StateDone
			if res.Interrupted {
				x.State = api.StateCancelled
			}
		})
		if res.Interrupted {
			final = api.StateCancelled
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
		if x := &r.status.Strategies[i]; x.State == api.StatePending {
			x.State = final // never started: the rush failed or was cancelled first
		}
	}
	r.mu.Unlock()
	r.log.Info("rush ended", slog.String("state", final))
}

// live sets x's figures from a cell's counters.
func live(x *api.RushStrategy, c sim.Counters) {
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
