package lockbench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/report/latency"
)

// Mode is the kind of measurement of a cell.
type Mode string

// The modes.
const (
	// Uncontended: each goroutine loops acquire+release on its own key.
	Uncontended Mode = "uncontended"
	// Contended: every goroutine loops acquire+release on one shared key.
	Contended Mode = "contended"
)

// Cell is one measurement setting: a mode, a goroutine count and how long
// each configuration runs in it (split into rounds, see Options).
type Cell struct {
	Mode       Mode          `json:"mode"`
	Goroutines int           `json:"goroutines"`
	Duration   time.Duration `json:"-"`
}

// Result is what one configuration did in one cell, summed over rounds.
type Result struct {
	Cell     Cell          `json:"cell"`
	Config   string        `json:"config"`
	Library  string        `json:"library"`
	Ours     bool          `json:"ours"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Acquires int64         `json:"acquires"`
	// Tries counts lock attempts, failed ones included.
	Tries int64 `json:"tries"`
	// GaveUp counts calls the library abandoned before the run ended
	// (redsync after its tries, redislock after its retry limit); the
	// loop called again and the wait went on.
	GaveUp int64 `json:"gave_up"`
	// Overlaps counts entries into the critical section while another
	// goroutine was inside: mutual exclusion was broken. Must be 0.
	Overlaps int64 `json:"overlaps"`
	// Errors counts unexpected errors (Redis errors, failed releases).
	Errors    int64  `json:"errors"`
	LastError string `json:"last_error,omitempty"`
	// RoundTrips counts commands and pipelines sent.
	RoundTrips int64  `json:"round_trips"`
	Mallocs    uint64 `json:"mallocs"`
	Bytes      uint64 `json:"bytes"`
	// RedisCPU and GoCPU are CPU seconds used by redis-server and by this
	// process during the measurement.
	RedisCPU float64 `json:"redis_cpu_s"`
	// NewConns counts connections the server accepted during the
	// measurement (a pool that is warm opens none).
	NewConns int64   `json:"new_conns"`
	GoCPU    float64 `json:"go_cpu_s"`

	// MaxWait is the longest wait of a contended cell, counting waits
	// still unfinished when the run ended.
	MaxWait time.Duration `json:"max_wait_ns"`
	// TopShare is the largest fraction of a round's acquisitions made by
	// one goroutine: 1/goroutines is perfectly fair, 1 means one
	// goroutine kept the lock to itself.
	TopShare float64 `json:"top_share"`

	// Wait is, for contended cells, the time from starting to acquire
	// until held; for uncontended cells, the time of one acquire+release.
	Wait latency.Histogram `json:"-"`
}

// OpsPerSec is acquisitions per second.
func (r *Result) OpsPerSec() float64 { return perSec(float64(r.Acquires), r.Elapsed) }

// TriesPerSec is lock attempts per second.
func (r *Result) TriesPerSec() float64 { return perSec(float64(r.Tries), r.Elapsed) }

// AllocsPerOp is heap allocations per acquire+release.
func (r *Result) AllocsPerOp() float64 { return per(float64(r.Mallocs), r.Acquires) }

// BytesPerOp is heap bytes allocated per acquire+release.
func (r *Result) BytesPerOp() float64 { return per(float64(r.Bytes), r.Acquires) }

// TripsPerOp is Redis round trips per acquire+release.
func (r *Result) TripsPerOp() float64 { return per(float64(r.RoundTrips), r.Acquires) }

// P50 and P99 are quantiles of Wait.
func (r *Result) P50() time.Duration { return r.Wait.Quantile(0.50) }

// P99 is the 99th percentile of Wait.
func (r *Result) P99() time.Duration { return r.Wait.Quantile(0.99) }

// P999 is the 99.9th percentile of Wait.
func (r *Result) P999() time.Duration { return r.Wait.Quantile(0.999) }

// RedisCPUFrac is redis-server's CPU use as a fraction of one core.
func (r *Result) RedisCPUFrac() float64 { return r.RedisCPU / r.Elapsed.Seconds() }

// GoCPUFrac is this process's CPU use as a fraction of one core.
func (r *Result) GoCPUFrac() float64 { return r.GoCPU / r.Elapsed.Seconds() }

func perSec(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

func per(n float64, ops int64) float64 {
	if ops == 0 {
		return 0
	}
	return n / float64(ops)
}

// Runner measures configurations against one Redis.
type Runner struct {
	// Addr is the redis-server's host:port.
	Addr string
	// TTL is the lease of every hold.
	TTL time.Duration
	// Admin is a client used for INFO and clean-up, not measured.
	Admin *redis.Client

	clients map[string]*measuredClient
}

type measuredClient struct {
	rdb *redis.Client
	hc  *counter
}

// Close closes the clients the runner opened.
func (r *Runner) Close() {
	for _, c := range r.clients {
		c.rdb.Close()
	}
}

// client returns the configuration's own client (one per config for the
// whole run, so its pool stays warm between rounds), with the counter hook.
func (r *Runner) client(c Config) *measuredClient {
	if r.clients == nil {
		r.clients = map[string]*measuredClient{}
	}
	mc, ok := r.clients[c.Name]
	if !ok {
		rdb := redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: 64})
		hc := &counter{}
		rdb.AddHook(hc)
		mc = &measuredClient{rdb: rdb, hc: hc}
		r.clients[c.Name] = mc
	}
	return mc
}

// Run measures config c in cell for d (one round) and adds the outcome to
// res. Workers are created, and each does one unmeasured acquire+release
// (loading scripts, filling the pool), before the clock starts.
func (r *Runner) Run(ctx context.Context, c Config, cell Cell, d time.Duration, res *Result) error {
	mc := r.client(c)
	var tries atomic.Int64
	workers := make([]Worker, cell.Goroutines)
	for i := range workers {
		key := "lockbench:" + c.Name + ":" + string(cell.Mode)
		if cell.Mode == Uncontended {
			key += ":" + strconv.Itoa(i)
		}
		workers[i] = c.newWorker(mc.rdb, key, r.TTL, &tries)
	}
	if err := warmUp(ctx, workers); err != nil {
		return fmt.Errorf("%s warm-up: %w", c.Name, err)
	}

	hists := make([]latency.Histogram, cell.Goroutines)
	stats := make([]workerStats, cell.Goroutines)
	var rc roundCounts

	cpu0, conns0, err := ServerStats(ctx, r.Admin)
	if err != nil {
		return err
	}
	tries.Store(0)
	trips0, setnx0 := mc.hc.trips.Load(), mc.hc.setNX.Load()
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	go0 := processCPU()
	start := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, start.Add(d))
	defer cancel()

	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() { rc.work(runCtx, w, cell.Mode, &hists[i], &stats[i]) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	go1 := processCPU()
	runtime.ReadMemStats(&ms1)
	cpu1, conns1, err := ServerStats(ctx, r.Admin)
	if err != nil {
		return err
	}
	res.Cell, res.Config, res.Library, res.Ours = cell, c.Name, c.Library, c.Ours()
	res.Elapsed += elapsed
	res.Acquires += rc.acquires.Load()
	if c.countsTriesItself {
		res.Tries += tries.Load()
	} else {
		res.Tries += mc.hc.setNX.Load() - setnx0
	}
	res.GaveUp += rc.gaveUp.Load()
	res.Overlaps += rc.overlaps.Load()
	res.Errors += rc.errs.Load()
	if s, ok := rc.lastErr.Load().(string); ok {
		res.LastError = s
	}
	res.RoundTrips += mc.hc.trips.Load() - trips0
	res.Mallocs += ms1.Mallocs - ms0.Mallocs
	res.Bytes += ms1.TotalAlloc - ms0.TotalAlloc
	res.RedisCPU += cpu1 - cpu0
	res.NewConns += conns1 - conns0
	res.GoCPU += go1 - go0
	for i := range hists {
		res.Wait.Merge(&hists[i])
		res.MaxWait = max(res.MaxWait, stats[i].maxWait)
		if cell.Mode == Contended {
			res.TopShare = max(res.TopShare, float64(stats[i].acquires)/float64(max(rc.acquires.Load(), 1)))
		}
	}
	return nil
}

// roundCounts is what the workers of one round count together.
type roundCounts struct {
	acquires, gaveUp, overlaps, errs atomic.Int64
	lastErr                          atomic.Value // the last error's text
	inside                           atomic.Int32 // workers holding the lock now
}

// work is one worker's loop of acquire and release until ctx ends: its
// waits go to h and st (in mode Contended, from the call to the hold; in
// mode Uncontended, the whole acquire+release), the rest to rc.
func (rc *roundCounts) work(ctx context.Context, w Worker, mode Mode, h *latency.Histogram,
	st *workerStats) {
	var t0 time.Time
	waiting := false
	for ctx.Err() == nil {
		if !waiting {
			t0 = time.Now()
			waiting = true
		}
		err := w.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				// Still waiting when the run ended: the wait is not an
				// acquisition, but it bounds the longest wait from below.
				if mode == Contended {
					st.maxWait = max(st.maxWait, time.Since(t0))
				}
				return
			}
			if errors.Is(err, ErrGaveUp) {
				rc.gaveUp.Add(1)
				continue
			}
			rc.errs.Add(1)
			rc.lastErr.Store(err.Error())
			continue
		}
		if mode == Contended {
			wait := time.Since(t0)
			h.Record(wait)
			st.maxWait = max(st.maxWait, wait)
			if rc.inside.Add(1) != 1 {
				rc.overlaps.Add(1)
			}
			rc.inside.Add(-1)
		}
		// Release even when the run's deadline has passed.
		if err := w.Release(context.WithoutCancel(ctx)); err != nil {
			rc.errs.Add(1)
			rc.lastErr.Store(err.Error())
		}
		if mode == Uncontended {
			h.Record(time.Since(t0))
		}
		waiting = false
		rc.acquires.Add(1)
		st.acquires++
	}
}

// warmUp has every worker acquire and release once, all at the same time,
// so that the client's pool holds as many connections as the measurement
// will use and the scripts are loaded.
func warmUp(ctx context.Context, workers []Worker) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := w.Acquire(ctx)
				if errors.Is(err, ErrGaveUp) {
					continue
				}
				if err == nil {
					err = w.Release(ctx)
				}
				errs[i] = err
				return
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

type workerStats struct {
	acquires int64
	maxWait  time.Duration
}

// ServerStats returns the server's CPU time, used_cpu_user +
// used_cpu_sys in seconds, and total_connections_received, read from
// INFO through admin.
func ServerStats(ctx context.Context, admin *redis.Client) (cpu float64, conns int64, err error) {
	info, err := admin.Info(ctx, "cpu", "stats").Result()
	if err != nil {
		return 0, 0, fmt.Errorf("INFO: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_cpu_user", "used_cpu_sys":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("INFO %s: %w", k, err)
			}
			cpu += f
		case "total_connections_received":
			if conns, err = strconv.ParseInt(v, 10, 64); err != nil {
				return 0, 0, fmt.Errorf("INFO %s: %w", k, err)
			}
		}
	}
	return cpu, conns, nil
}

// processCPU returns this process's user+system CPU seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
