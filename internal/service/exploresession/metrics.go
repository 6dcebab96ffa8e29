package exploresession

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// stats counts what the sessions did, for the metrics.
type stats struct {
	mu       sync.Mutex
	sessions int
	steps    map[string]int // by action kind
	finds    map[bool]int   // by whether a counterexample was found
}

func (s *stats) started() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions++
}

func (s *stats) stepped(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.steps == nil {
		s.steps = map[string]int{}
	}
	s.steps[kind]++
}

func (s *stats) searched(found bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finds == nil {
		s.finds = map[bool]int{}
	}
	s.finds[found]++
}

var (
	descSessions = prometheus.NewDesc("lockmarket_explore_sessions",
		"Explorer sessions open in the lab.", nil, nil)
	descStarted = prometheus.NewDesc("lockmarket_explore_sessions_total",
		"Explorer sessions started.", nil, nil)
	descSteps = prometheus.NewDesc("lockmarket_explore_steps_total",
		"Actions taken in explorer sessions, by kind (run, tick, pause, crash).", []string{"kind"}, nil)
	descFinds = prometheus.NewDesc("lockmarket_explore_finds_total",
		"Searches for a counterexample from a session's state, by whether one was found "+
			"(a lost update a lock does not promise counts).", []string{"found"}, nil)
)

// Describe implements prometheus.Collector.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessions, descStarted, descSteps, descFinds} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(m.store.Len()))
	m.stats.mu.Lock()
	defer m.stats.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descStarted, prometheus.CounterValue, float64(m.stats.sessions))
	for k, n := range m.stats.steps {
		ch <- prometheus.MustNewConstMetric(descSteps, prometheus.CounterValue, float64(n), k)
	}
	for f, n := range m.stats.finds {
		ch <- prometheus.MustNewConstMetric(descFinds, prometheus.CounterValue, float64(n), strconv.FormatBool(f))
	}
}
