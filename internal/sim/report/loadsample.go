package report

import (
	"math"
	"sync"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
)

// LoadSampler reads the machine's load average every LoadEvery
// during a run, so that a burst between its start and its end is seen.
type LoadSampler struct {
	start   time.Time
	stop    chan struct{}
	done    sync.WaitGroup
	mu      sync.Mutex
	samples []LoadSample
	peak    probe.Load
}

// SampleLoad starts reading the load; load0 is the reading at the start.
// The caller must call Finish.
func SampleLoad(load0 probe.Load) *LoadSampler {
	s := &LoadSampler{start: time.Now(), stop: make(chan struct{})}
	s.add(load0)
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(LoadEvery)
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

func (s *LoadSampler) add(l probe.Load) {
	if !l.OK {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, LoadSample{AtS: round1(time.Since(s.start).Seconds()), Avg1m: l.Avg1})
	if !s.peak.OK || l.Avg1 > s.peak.Avg1 {
		s.peak = l
	}
}

// Finish stops the sampling, adds the reading at the end (end), and
// returns every reading and the peak (nil where the OS reports no load).
func (s *LoadSampler) Finish(end probe.Load) ([]LoadSample, *Load) {
	close(s.stop)
	s.done.Wait()
	s.add(end)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, NewLoad(s.peak, probe.Load{})
}

// round1 rounds v to one decimal.
func round1(v float64) float64 { return math.Round(v*10) / 10 }
