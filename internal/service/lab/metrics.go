package lab

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The verdicts a variant is counted under.
const (
	verdictViolation = "violation" // a checker or a step found a violation
	verdictClean     = "clean"     // none found
	verdictFailed    = "failed"    // the run itself failed
)

type variantKey struct{ name, verdict string }

var (
	descVariants = prometheus.NewDesc("lockmarket_lab_variants_total",
		"Lab variants run (flawed, fixed, or a strategy under the pause fault) by verdict.",
		[]string{"variant", "verdict"}, nil)
	descLabRunning = prometheus.NewDesc("lockmarket_lab_running", "1 while a lab run runs, 0 otherwise.", nil, nil)
)

func verdictOf(violations int) string {
	if violations > 0 {
		return verdictViolation
	}
	return verdictClean
}

// count records one variant run; l.mu is held.
func (l *Runner) count(name, verdict string) {
	if l.variants == nil {
		l.variants = map[variantKey]int{}
	}
	l.variants[variantKey{name, verdict}]++
}

// Describe implements prometheus.Collector: a Runner exports what its runs
// found.
func (l *Runner) Describe(ch chan<- *prometheus.Desc) {
	ch <- descVariants
	ch <- descLabRunning
}

// Collect implements prometheus.Collector.
func (l *Runner) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	running := 0.0
	if l.running {
		running = 1
	}
	ch <- prometheus.MustNewConstMetric(descLabRunning, prometheus.GaugeValue, running)
	for k, n := range l.variants {
		ch <- prometheus.MustNewConstMetric(descVariants, prometheus.CounterValue, float64(n), k.name, k.verdict)
	}
}
