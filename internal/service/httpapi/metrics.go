package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// metrics are the service's Prometheus metrics, on a private registry.
type metrics struct {
	purchases *prometheus.CounterVec   // strategy, outcome
	listings  *prometheus.CounterVec   // strategy, outcome
	retries   *prometheus.CounterVec   // op, strategy
	lockWaits *prometheus.CounterVec   // op, strategy
	lockLost  *prometheus.CounterVec   // op, strategy
	wait      *prometheus.HistogramVec // op, strategy: successful operations
	retryHist *prometheus.HistogramVec // strategy: per purchase
	waitHist  *prometheus.HistogramVec // strategy: lock waits per purchase
	gateWait  *prometheus.HistogramVec // strategy
	requests  *prometheus.CounterVec   // method, route, status
}

// newMetrics makes the metrics and registers them, with the Redis pool,
// Go runtime and process collectors and those of the jobs that are
// collectors themselves (the rush's last figures, the lab's findings), on
// reg. It fails, and leaves reg as it was, when reg already holds any of
// them (e.g. a Server made before on the same registry).
func newMetrics(reg prometheus.Registerer, pool pooler, jobs ...any) (*metrics, error) {
	countBuckets := []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500}
	waitBuckets := prometheus.ExponentialBuckets(0.0001, 2.5, 14)
	m := &metrics{
		purchases: counterVec("lockmarket_purchases_total",
			"Purchases by strategy and outcome (ok or an error code).", "strategy", "outcome"),
		listings: counterVec("lockmarket_listings_total",
			"Listings by strategy and outcome (ok or an error code).", "strategy", "outcome"),
		retries: counterVec("lockmarket_retries_total",
			"EXEC attempts aborted by WATCH, summed over operations.", "op", "strategy"),
		lockWaits: counterVec("lockmarket_lock_waits_total",
			"Failed lock acquisition attempts before the lock was held, summed over operations.", "op", "strategy"),
		lockLost: counterVec("lockmarket_lock_lost_total",
			"Operations whose lock lease had expired by the time they released it.", "op", "strategy"),
		wait: histogramVec("lockmarket_operation_wait_seconds",
			"Wall time of successful operations, lock waits and retries included.", waitBuckets, "op", "strategy"),
		retryHist: histogramVec("lockmarket_purchase_retries",
			"EXEC attempts aborted by WATCH per purchase.", countBuckets, "strategy"),
		waitHist: histogramVec("lockmarket_purchase_lock_waits",
			"Failed lock acquisition attempts per purchase.", countBuckets, "strategy"),
		gateWait: histogramVec("lockmarket_strategy_gate_wait_seconds",
			"Time operations waited for operations of another strategy to drain.", waitBuckets, "strategy"),
		requests: counterVec("lockmarket_http_requests_total",
			"HTTP requests by method, route and status.", "method", "route", "status"),
	}
	cs := []prometheus.Collector{m.purchases, m.listings, m.retries, m.lockWaits, m.lockLost, m.wait, m.retryHist,
		m.waitHist, m.gateWait, m.requests, newPoolCollector(pool),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
	for _, j := range jobs {
		if c, ok := j.(prometheus.Collector); ok {
			cs = append(cs, c)
		}
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("httpapi: register metrics: %w", err)
		}
	}
	return m, nil
}

// counterVec is a vector of counters called name, labelled by labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// histogramVec is a vector of histograms called name, with buckets,
// labelled by labels.
func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// observe records one list or purchase.
func (m *metrics) observe(op string, s market.Strategy, outcome string, cost market.Cost) {
	st := string(s)
	if op == opPurchase {
		m.purchases.WithLabelValues(st, outcome).Inc()
	} else {
		m.listings.WithLabelValues(st, outcome).Inc()
	}
	m.retries.WithLabelValues(op, st).Add(float64(cost.Retries))
	m.lockWaits.WithLabelValues(op, st).Add(float64(cost.LockWaits))
	if cost.LockLost {
		m.lockLost.WithLabelValues(op, st).Inc()
	}
	if outcome == outcomeOK {
		m.wait.WithLabelValues(op, st).Observe(cost.Wait.Seconds())
	}
	if op == opPurchase {
		m.retryHist.WithLabelValues(st).Observe(float64(cost.Retries))
		m.waitHist.WithLabelValues(st).Observe(float64(cost.LockWaits))
	}
}

func (m *metrics) observeGate(s market.Strategy, d time.Duration) {
	m.gateWait.WithLabelValues(string(s)).Observe(d.Seconds())
}

// observeRequest counts one request. route is the route's template (echo's
// c.Path, "unmatched" for none), never the raw path, and a method the
// service does not know is counted as "other": every label takes a bounded
// set of values, whatever clients send.
func (m *metrics) observeRequest(method, route string, status int) {
	m.requests.WithLabelValues(methodLabel(method), route, strconv.Itoa(status)).Inc()
}

// methodLabel is the method label of a request: the method itself if it
// is one of HTTP's standard methods, "other" otherwise.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "other"
}

// pooler has a Redis connection pool (a client, a marketPool).
type pooler interface{ PoolStats() *redis.PoolStats }

// marketPool is the connection pool of a market.
type marketPool struct{ m *market.Market }

// PoolStats are the statistics of the market's pool.
func (p marketPool) PoolStats() *redis.PoolStats { return markettrace.PoolStats(p.m) }

// poolCollector exports the Redis client's connection pool statistics.
type poolCollector struct {
	pool                                       pooler
	hits, misses, timeouts, total, idle, stale *prometheus.Desc
}

func newPoolCollector(pool pooler) *poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("lockmarket_redis_pool_"+name, help, nil, nil)
	}
	return &poolCollector{
		pool:     pool,
		hits:     d("hits_total", "Times a free connection was found in the pool."),
		misses:   d("misses_total", "Times no free connection was found in the pool."),
		timeouts: d("timeouts_total", "Times waiting for a connection timed out."),
		total:    d("connections", "Connections in the pool."),
		idle:     d("idle_connections", "Idle connections in the pool."),
		stale:    d("stale_connections_total", "Stale connections removed from the pool."),
	}
}

// Describe implements prometheus.Collector.
func (p *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.hits, p.misses, p.timeouts, p.total, p.idle, p.stale} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.pool.PoolStats()
	if s == nil {
		return
	}
	for _, v := range []struct {
		d   *prometheus.Desc
		typ prometheus.ValueType
		n   uint32
	}{
		{p.hits, prometheus.CounterValue, s.Hits},
		{p.misses, prometheus.CounterValue, s.Misses},
		{p.timeouts, prometheus.CounterValue, s.Timeouts},
		{p.total, prometheus.GaugeValue, s.TotalConns},
		{p.idle, prometheus.GaugeValue, s.IdleConns},
		{p.stale, prometheus.CounterValue, s.StaleConns},
	} {
		m, err := prometheus.NewConstMetric(v.d, v.typ, float64(v.n))
		if err != nil {
			m = prometheus.NewInvalidMetric(v.d, err)
		}
		ch <- m
	}
}
