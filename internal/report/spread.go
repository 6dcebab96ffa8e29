package report

import (
	"fmt"
	"math"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/latency"
)

// Slice is what one slice of a cell measured: the cell's duration split
// into rounds, each slice a fresh market of its own, run in turn with the
// other strategies' slices of the same round, so that a change in the
// machine's load during the run hits every strategy alike.
type Slice struct {
	// Round is the slice's round, from 1.
	Round      int     `json:"round"`
	ElapsedS   float64 `json:"elapsed_s"`
	Bought     int64   `json:"bought"`
	BoughtPerS float64 `json:"bought_per_s"`
	OpsPerS    float64 `json:"ops_per_s"`
	// RetriesPerPurchase is absent when the slice bought nothing.
	RetriesPerPurchase *float64 `json:"retries_per_purchase,omitempty"`
}

// SliceOf is the Slice of round's result.
func SliceOf(round int, r sim.Result) Slice {
	s := Slice{Round: round, ElapsedS: latency.Seconds(r.Elapsed), Bought: r.Bought,
		BoughtPerS: round3(r.BoughtPerSecond()), OpsPerS: round3(r.OpsPerSecond())}
	if v, ok := r.RetriesPerPurchase(); ok {
		v = round3(v)
		s.RetriesPerPurchase = &v
	}
	return s
}

// SetSlices records a row's slices and their range.
func (r *Row) SetSlices(slices []Slice) {
	r.Slices = slices
	for i, s := range slices {
		if i == 0 || s.BoughtPerS < r.BoughtPerSMin {
			r.BoughtPerSMin = s.BoughtPerS
		}
		if i == 0 || s.BoughtPerS > r.BoughtPerSMax {
			r.BoughtPerSMax = s.BoughtPerS
		}
		if i == 0 || s.OpsPerS < r.OpsPerSMin {
			r.OpsPerSMin = s.OpsPerS
		}
		if i == 0 || s.OpsPerS > r.OpsPerSMax {
			r.OpsPerSMax = s.OpsPerS
		}
	}
}

// boughtRange is the row's bought per second with its range over the
// slices, "4,210/s (3,980–4,400)", or without a range when the row has
// fewer than two slices.
func (r Row) boughtRange() string {
	s := count(r.BoughtPerS) + "/s"
	if len(r.Slices) >= 2 {
		s += " (" + count(r.BoughtPerSMin) + "–" + count(r.BoughtPerSMax) + ")"
	}
	return s
}

// pairing compares two rows of a scenario slice by slice: the ratio of
// a's purchases per second to b's in each round both measured.
type pairing struct {
	rounds int
	// lo and hi are the smallest and largest ratio a/b (+Inf where b
	// bought nothing and a did; a round where neither bought counts 1).
	lo, hi float64
}

// pair pairs a's slices with b's by round.
func pair(a, b Row) pairing {
	p := pairing{lo: math.Inf(1), hi: math.Inf(-1)}
	for _, sa := range a.Slices {
		for _, sb := range b.Slices {
			if sa.Round != sb.Round {
				continue
			}
			ratio := 1.0
			switch {
			case sb.BoughtPerS > 0:
				ratio = sa.BoughtPerS / sb.BoughtPerS
			case sa.BoughtPerS > 0:
				ratio = math.Inf(1)
			}
			p.rounds++
			p.lo, p.hi = math.Min(p.lo, ratio), math.Max(p.hi, ratio)
		}
	}
	return p
}

// minRounds is the fewest paired slices from which a reading names a
// winner: with one, there is no spread to compare the difference with.
const minRounds = 2

// ahead reports whether a bought more than b in every paired round (and
// there were at least minRounds): the difference then exceeds the spread
// the load and the noise gave the rounds.
func (p pairing) ahead() bool { return p.rounds >= minRounds && p.lo > 1 }

// behind reports whether a bought less than b in every paired round.
func (p pairing) behind() bool { return p.rounds >= minRounds && p.hi < 1 }

// text is the ratios' range, "0.92–1.15× over 5 rounds".
func (p pairing) text() string {
	if p.rounds == 0 {
		return "no round measured both"
	}
	r := fmtRatio(p.lo) + "×"
	if p.hi != p.lo {
		r = fmtRatio(p.lo) + "–" + fmtRatio(p.hi) + "×"
	}
	return fmt.Sprintf("%s over %s", r, output.Count(p.rounds, "round"))
}

// Load is the machine's load at one moment of a run.
type Load struct {
	// Avg1m, Avg5m and Avg15m are the load averages over 1, 5 and 15
	// minutes (runnable and waiting tasks); CPUs how many CPUs there are.
	Avg1m  float64 `json:"load_avg_1m"`
	Avg5m  float64 `json:"load_avg_5m"`
	Avg15m float64 `json:"load_avg_15m"`
	CPUs   int     `json:"cpus"`
	// CPUStealPct is the share of CPU time the hypervisor gave to other
	// guests, in percent: since boot at the start of a run, during the
	// run at its end; absent where the OS does not count it.
	CPUStealPct *float64 `json:"cpu_steal_pct,omitempty"`
	// Since says what CPUStealPct covers: "boot" or "run".
	Since string `json:"cpu_steal_since,omitempty"`
}

// NewLoad is the Load of reading now, its steal counted from since (the
// zero probe.Load: since boot); nil where the OS reports no load.
func NewLoad(now, since probe.Load) *Load {
	if !now.OK {
		return nil
	}
	l := &Load{Avg1m: now.Avg1, Avg5m: now.Avg5, Avg15m: now.Avg15, CPUs: now.CPUs}
	if share, ok := probe.StealShare(since, now); ok {
		pct := math.Round(share*1000) / 10
		l.CPUStealPct = &pct
		l.Since = "boot"
		if since.OK {
			l.Since = "run"
		}
	}
	return l
}

// String is the load in words: "load average 4.03 2.41 1.16 (1, 5, 15
// min) on 2 CPUs, CPU steal 0.0% since boot".
func (l *Load) String() string {
	if l == nil {
		return "load not reported by the OS"
	}
	s := fmt.Sprintf("load average %.2f %.2f %.2f (1, 5, 15 min) on %d CPUs", l.Avg1m, l.Avg5m, l.Avg15m, l.CPUs)
	if l.CPUStealPct != nil {
		since := "since boot"
		if l.Since == "run" {
			since = "during the run"
		}
		s += fmt.Sprintf(", CPU steal %.1f%% %s", *l.CPUStealPct, since)
	}
	return s
}

// LoadText says the load at a run's start and end in one sentence, or ""
// for a document saved before loads were recorded.
func LoadText(start, end *Load) string {
	switch {
	case start == nil && end == nil:
		return ""
	case end == nil:
		return "At the start: " + start.String() + "."
	}
	return "At the start: " + start.String() + "; at the end: " + end.String() + "."
}
