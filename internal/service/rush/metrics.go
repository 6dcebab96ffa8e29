package rush

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockmarket/lockmarket/internal/service/api"
)

// The last rush's figures as Prometheus gauges, one series per strategy,
// read from its status at each scrape: a Runner is a prometheus.Collector.
var (
	descBought = prometheus.NewDesc("lockmarket_rush_bought",
		"Items bought by the last rush's buyers under the strategy.", []string{"strategy"}, nil)
	descRate = prometheus.NewDesc("lockmarket_rush_purchases_per_second",
		"Purchases per second in the last rush under the strategy.", []string{"strategy"}, nil)
	descRetries = prometheus.NewDesc("lockmarket_rush_retries_per_purchase",
		"EXECs aborted by WATCH per item bought in the last rush.", []string{"strategy"}, nil)
	descLockWaits = prometheus.NewDesc("lockmarket_rush_lock_waits_per_purchase",
		"Failed lock attempts per item bought in the last rush.", []string{"strategy"}, nil)
	descLost = prometheus.NewDesc("lockmarket_rush_lost_to_another_buyer",
		"Purchases in the last rush whose listing another buyer bought first.", []string{"strategy"}, nil)
	descWait = prometheus.NewDesc("lockmarket_rush_wait_seconds",
		"Wait of the last rush's successful purchases at the quantile (0.5, 0.99).", []string{"strategy", "quantile"}, nil)
	descAudit = prometheus.NewDesc("lockmarket_rush_audit_violations",
		"Invariant violations the audit found after the strategy's part of the last rush.", []string{"strategy"}, nil)
	descRunning = prometheus.NewDesc("lockmarket_rush_running",
		"1 while a rush runs, 0 otherwise.", nil, nil)
	descRTT = prometheus.NewDesc("lockmarket_rush_round_trip_seconds",
		"The last rush's round trip to Redis as measured (PING median), delay added included.", nil, nil)
)

// Describe implements prometheus.Collector.
func (r *Runner) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBought, descRate, descRetries, descLockWaits, descLost, descWait,
		descAudit, descRunning, descRTT} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (r *Runner) Collect(ch chan<- prometheus.Metric) {
	st := r.snapshot()
	running := 0.0
	if st.State == api.StateRunning {
		running = 1
	}
	ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, running)
	if st.State == api.StateIdle {
		return
	}
	ch <- prometheus.MustNewConstMetric(descRTT, prometheus.GaugeValue, st.MeasuredRTTMS/1000)
	for _, s := range st.Strategies {
		if s.State == api.StatePending {
			continue
		}
		l := string(s.Strategy)
		for _, v := range []struct {
			d *prometheus.Desc
			x float64
		}{
			{descBought, float64(s.Bought)},
			{descRate, s.PurchasesPerS},
			{descRetries, s.RetriesPerPurchase},
			{descLockWaits, s.LockWaitsPerPurchase},
			{descLost, float64(s.LostToAnotherBuyer)},
			{descAudit, float64(s.AuditViolations)},
		} {
			ch <- prometheus.MustNewConstMetric(v.d, prometheus.GaugeValue, v.x, l)
		}
		if s.WaitSamples > 0 {
			ch <- prometheus.MustNewConstMetric(descWait, prometheus.GaugeValue, s.P50WaitMS/1000, l, "0.5")
			ch <- prometheus.MustNewConstMetric(descWait, prometheus.GaugeValue, s.P99WaitMS/1000, l, "0.99")
		}
	}
}
