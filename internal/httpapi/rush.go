package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/latency"
	"github.com/lockmarket/lockmarket/internal/netdelay"
	"github.com/lockmarket/lockmarket/internal/redisconn"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/market"
)

// Bounds and defaults of a rush (POST /api/rush).
const (
	MaxRushBuyers       = 200
	MaxRushListers      = 50
	DefaultRushListers  = 5
	MinRushDuration     = time.Second
	MaxRushDuration     = 60 * time.Second
	MaxRushRTT          = time.Second // the round trip a rush may add
	rushRTTSamples      = 200         // PINGs that measure the round trip, at most
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

// States of a rush and of each of its strategies.
const (
	stateIdle      = "idle"
	statePending   = "pending"
	stateRunning   = "running"
	stateDone      = "done"
	stateCancelled = "cancelled"
	stateFailed    = "failed"
)

type rushRequest struct {
	Buyers     *int64   `json:"buyers"`
	Listers    *int64   `json:"listers"`
	DurationMS *int64   `json:"duration_ms"`
	Strategies []string `json:"strategies"`
	RTTMS      *float64 `json:"rtt_ms"`
}

// rushStatus is the answer of GET /api/rush: the last rush, live while it
// runs.
type rushStatus struct {
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
	// delay proxy in the service (internal/netdelay); MeasuredRTTMS the
	// PING median through the rush's clients, measured before it starts.
	RTTMS         float64        `json:"rtt_ms"`
	MeasuredRTTMS float64        `json:"measured_rtt_ms"`
	Redis         string         `json:"redis"`
	Error         string         `json:"error,omitempty"`
	Strategies    []rushStrategy `json:"strategies"`
}

// rushStrategy is one strategy's run in its own fresh market.
type rushStrategy struct {
	Strategy  market.Strategy `json:"strategy"`
	State     string          `json:"state"`
	Market    string          `json:"market"`
	ElapsedMS float64         `json:"elapsed_ms"`
	Listed    int64           `json:"listed"`
	Bought    int64           `json:"bought"`
	// Failed counts purchases that did not buy (the listing was gone, the
	// lock or transaction could not be had in time, ...).
	Failed        int64   `json:"failed"`
	PurchasesPerS float64 `json:"purchases_per_s"`
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
	Series []rushPoint `json:"series"`
}

type rushPoint struct {
	TMS           float64 `json:"t_ms"`
	PurchasesPerS float64 `json:"purchases_per_s"`
}

// rushSlot holds the server's one rush.
type rushSlot struct {
	mu      sync.Mutex
	running bool
	status  rushStatus
	cancel  context.CancelFunc
	done    chan struct{}
}

// snapshot returns a copy of the status, safe to encode.
func (r *rushSlot) snapshot() rushStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.status
	if st.State == "" {
		st.State = stateIdle
	}
	st.Strategies = slices.Clone(st.Strategies)
	for i := range st.Strategies {
		st.Strategies[i].Series = slices.Clone(st.Strategies[i].Series)
	}
	if st.Strategies == nil {
		st.Strategies = []rushStrategy{}
	}
	return st
}

// update changes strategy i's figures under the lock.
func (r *rushSlot) update(i int, f func(s *rushStrategy)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.status.Strategies[i])
}

// rushConfig is a validated rush request.
type rushConfig struct {
	buyers, listers int
	duration        time.Duration
	rtt             time.Duration
	strategies      []market.Strategy
}

func parseRush(req rushRequest) (rushConfig, error) {
	if err := missing(num("buyers", req.Buyers), num("duration_ms", req.DurationMS)); err != nil {
		return rushConfig{}, err
	}
	cfg := rushConfig{buyers: int(*req.Buyers), listers: DefaultRushListers}
	if *req.Buyers < 1 || *req.Buyers > MaxRushBuyers {
		return cfg, invalid("buyers must be between 1 and %d", MaxRushBuyers)
	}
	if req.Listers != nil {
		if *req.Listers < 1 || *req.Listers > MaxRushListers {
			return cfg, invalid("listers must be between 1 and %d", MaxRushListers)
		}
		cfg.listers = int(*req.Listers)
	}
	if *req.DurationMS < MinRushDuration.Milliseconds() || *req.DurationMS > MaxRushDuration.Milliseconds() {
		return cfg, invalid("duration_ms must be between %d and %d", MinRushDuration.Milliseconds(), MaxRushDuration.Milliseconds())
	}
	cfg.duration = time.Duration(*req.DurationMS) * time.Millisecond
	if req.RTTMS != nil {
		if *req.RTTMS < 0 || *req.RTTMS > float64(MaxRushRTT.Milliseconds()) {
			return cfg, invalid("rtt_ms must be between 0 and %d", MaxRushRTT.Milliseconds())
		}
		cfg.rtt = time.Duration(*req.RTTMS * float64(time.Millisecond))
	}
	if req.Strategies == nil {
		cfg.strategies = slices.Clone(market.Strategies)
	} else if len(req.Strategies) == 0 {
		return cfg, invalid("strategies must name at least one of %v", market.Strategies)
	}
	for _, name := range req.Strategies {
		st, err := market.ParseStrategy(name)
		if err != nil {
			return cfg, err
		}
		if slices.Contains(cfg.strategies, st) {
			return cfg, invalid("strategy %q is named twice", name)
		}
		cfg.strategies = append(cfg.strategies, st)
	}
	return cfg, nil
}

// startRush is POST /api/rush: 202 and the rush's status; it runs in the
// background, each strategy in a fresh market of its own.
func (s *Server) startRush(c echo.Context) error {
	var req rushRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	cfg, err := parseRush(req)
	if err != nil {
		return err
	}
	r := &s.jobs.rush
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return busy("rush")
	}
	if s.jobs.ctx.Err() != nil {
		r.mu.Unlock()
		return closed()
	}
	id := newRunID()
	per := cfg.duration / time.Duration(len(cfg.strategies))
	st := rushStatus{ID: id, State: stateRunning, Buyers: cfg.buyers, Listers: cfg.listers,
		DurationMS: latency.Milliseconds(cfg.duration), StrategyDurationMS: latency.Milliseconds(per),
		RTTMS: latency.Milliseconds(cfg.rtt), Redis: s.cfg.Env.Redis.Mode}
	for _, strat := range cfg.strategies {
		st.Strategies = append(st.Strategies, rushStrategy{Strategy: strat, State: statePending,
			Market: fmt.Sprintf("rush-%s-%s", id, strat), Series: []rushPoint{}})
	}
	ctx, cancel := context.WithCancel(s.jobs.ctx)
	r.running, r.status, r.cancel, r.done = true, st, cancel, make(chan struct{})
	done := r.done
	s.jobs.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer s.jobs.wg.Done()
		defer close(done)
		defer cancel()
		s.runRush(ctx, cfg, per)
	}()
	s.log.Info("rush started", slog.String("id", id), slog.Int("buyers", cfg.buyers),
		slog.Float64("duration_ms", latency.Milliseconds(cfg.duration)))
	c.Response().Header().Set(echo.HeaderLocation, "/api/rush")
	return c.JSON(http.StatusAccepted, r.snapshot())
}

// runRush runs each strategy in turn with sim.Run: a fresh market, the
// listers refilling it, the buyers buying among the cheapest listings;
// with a round trip, every client's connections go through a delay proxy.
func (s *Server) runRush(ctx context.Context, cfg rushConfig, per time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, cfg.duration+rushGrace)
	defer cancel()
	r := &s.jobs.rush
	final, failure := stateDone, ""
	fail := func(err error) {
		if ctx.Err() != nil {
			final = stateCancelled // stopped, not failed
			return
		}
		s.log.Warn("rush failed", slog.Any("err", err))
		final, failure = stateFailed, err.Error()
	}
	var hooks []redis.Hook
	if s.cfg.Mini != nil {
		hooks = append(hooks, redisconn.MiniWatchHook{}) // WATCH as a real server does it
	}
	var dial redisconn.Dial
	if cfg.rtt > 0 {
		d, err := netdelay.NewDialer(cfg.rtt)
		if err != nil {
			fail(err)
			cfg.strategies = nil
		} else {
			defer d.Close()
			dial = d.Dial
		}
	}
	rdb := redisconn.SizedClientDialing(s.m.Client(), cfg.buyers+cfg.listers+4, dial, hooks...)
	if rdb != s.m.Client() {
		defer rdb.Close()
	}
	if len(cfg.strategies) > 0 {
		if rtt, err := netdelay.MeasureRTT(ctx, rdb, rushSamples(cfg.rtt)); err != nil {
			fail(fmt.Errorf("measuring the round trip: %w", err))
			cfg.strategies = nil
		} else {
			r.mu.Lock()
			r.status.MeasuredRTTMS = latency.Milliseconds(rtt)
			r.mu.Unlock()
		}
	}
	for i, strat := range cfg.strategies {
		if ctx.Err() != nil {
			r.update(i, func(x *rushStrategy) { x.State = stateCancelled })
			final = stateCancelled
			continue
		}
		r.update(i, func(x *rushStrategy) { x.State = stateRunning })
		var last sim.Counters
		name := r.snapshot().Strategies[i].Market
		res, err := sim.Run(ctx, sim.Config{
			// The set-up, audit and clean-up go straight to Redis: only
			// the workers' operations pay the added round trip.
			Client: rdb, Setup: s.m.Client(), Scenario: sim.Scenario{Listers: cfg.listers, Buyers: cfg.buyers},
			Strategy: strat, Duration: per, Seed: 1, Name: name, ProgressEvery: rushProgressEvery,
			Progress: func(c sim.Counters) {
				dt := c.Elapsed - last.Elapsed
				rate := 0.0
				if dt > 0 {
					rate = float64(c.Bought-last.Bought) / dt.Seconds()
				}
				last = c
				r.update(i, func(x *rushStrategy) {
					x.live(c)
					if len(x.Series) < rushSeriesMaxPoints {
						x.Series = append(x.Series, rushPoint{TMS: latency.Milliseconds(c.Elapsed), PurchasesPerS: rate})
					}
				})
			},
		})
		if err != nil {
			r.update(i, func(x *rushStrategy) { x.State = stateFailed })
			fail(fmt.Errorf("%s: %w", strat, err))
			break
		}
		r.update(i, func(x *rushStrategy) {
			x.live(sim.Counters{Elapsed: res.Elapsed, Listed: res.Listed, Bought: res.Bought,
				Failed: res.Failed.Total(), Retries: res.Retries, LockWaits: res.LockWaits, Wait: res.Wait})
			f := res.Failed
			x.Failures = &f
			x.AuditViolations = res.Audit.Total()
			x.State = stateDone
			if res.Interrupted {
				x.State = stateCancelled
			}
		})
		if res.Interrupted {
			final = stateCancelled
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && failure == "" {
		failure = fmt.Sprintf("stopped at the rush's time bound (its duration and %v)", rushGrace)
	}
	r.mu.Lock()
	r.running = false
	r.status.State, r.status.Error = final, failure
	for i := range r.status.Strategies {
		if x := &r.status.Strategies[i]; x.State == statePending {
			x.State = final // never started: the rush failed or was cancelled first
		}
	}
	r.mu.Unlock()
	s.log.Info("rush ended", slog.String("state", final))
}

// rushSamples is how many PINGs measure a round trip of about rtt within
// rushRTTBudget: rushRTTSamples at most, 3 at least.
func rushSamples(rtt time.Duration) int {
	if rtt <= 0 {
		return rushRTTSamples
	}
	return int(min(rushRTTSamples, max(3, int64(rushRTTBudget/rtt))))
}

// live sets the figures from a cell's counters.
func (x *rushStrategy) live(c sim.Counters) {
	x.ElapsedMS = latency.Milliseconds(c.Elapsed)
	x.Listed, x.Bought, x.Failed, x.Retries, x.LockWaits = c.Listed, c.Bought, c.Failed, c.Retries, c.LockWaits
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

// getRush is GET /api/rush: the last rush, live while it runs ("state":
// "idle" before the first).
func (s *Server) getRush(c echo.Context) error {
	return c.JSON(http.StatusOK, s.jobs.rush.snapshot())
}

// cancelRush is DELETE /api/rush: stop the running rush (its operations in
// flight finish, its markets are audited and deleted) and answer its
// final status; without a running rush, the last status.
func (s *Server) cancelRush(c echo.Context) error {
	r := &s.jobs.rush
	r.mu.Lock()
	running, cancel, done := r.running, r.cancel, r.done
	r.mu.Unlock()
	if running {
		cancel()
		select {
		case <-done:
		case <-c.Request().Context().Done():
			return c.Request().Context().Err()
		}
	}
	return c.JSON(http.StatusOK, r.snapshot())
}

// newRunID returns a short random ID for a rush or a lab run.
func newRunID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
