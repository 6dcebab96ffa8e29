package main

import (
	"math"
	"sync"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/sim/report"
)

// loadSampler reads the machine's load average every report.LoadEvery
// during a run, so that a burst between its start and its end is seen.
type loadSampler struct {
	start   time.Time
	stop    chan struct{}
	done    sync.WaitGroup
	mu      sync.Mutex
	samples []report.LoadSample
	peak    probe.Load
}

// sampleLoad starts reading the load; load0 is the reading at the start.
// The caller must call finish.
func sampleLoad(load0 probe.Load) *loadSampler {
	s := &loadSampler{start: time.Now(), stop: make(chan struct{})}
	s.add(load0)
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(report.LoadEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.add(probe.ReadLoad())
			}
		}
	}()
	return s
}

func (s *loadSampler) add(l probe.Load) {
	if !l.OK {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, report.LoadSample{AtS: round1(time.Since(s.start).Seconds()), Avg1m: l.Avg1})
	if !s.peak.OK || l.Avg1 > s.peak.Avg1 {
		s.peak = l
	}
}

// finish stops the sampling, adds the reading at the end (end), and
// returns every reading and the peak (nil where the OS reports no load).
func (s *loadSampler) finish(end probe.Load) ([]report.LoadSample, *report.Load) {
	close(s.stop)
	s.done.Wait()
	s.add(end)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, report.NewLoad(s.peak, probe.Load{})
}

// round1 rounds v to one decimal.
func round1(v float64) float64 { return math.Round(v*10) / 10 }
