package report

import (
	"fmt"
	"math"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
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

// pairing compares two rows of a scenario round by round: the ratio of
// a's purchases per second to b's in each round both measured, and the
// 95% confidence interval of their geometric mean.
type pairing struct {
	rounds int
	// lo and hi are the smallest and largest ratio a/b over the rounds.
	lo, hi float64
	// ratio is the geometric mean of the ratios; ciLo and ciHi bound its
	// 95% confidence interval (a t interval of the mean log ratio: the
	// rounds pair a's slice with b's, run one after the other, so that a
	// change in the load moves both and drops out of the ratio). With
	// fewer than minRounds rounds the interval is unbounded.
	ratio, ciLo, ciHi float64
}

// Confidence is the confidence level of the intervals a reading rests on.
const Confidence = 0.95

// pair pairs a's slices with b's by round.
func pair(a, b Row) pairing {
	var logs []float64
	for _, sa := range a.Slices {
		for _, sb := range b.Slices {
			if sa.Round == sb.Round {
				logs = append(logs, math.Log(sliceRatio(sa, sb)))
			}
		}
	}
	return pairLogs(logs)
}

// sliceRatio is the ratio of a's purchases per second to b's. A slice
// that bought nothing counts half a purchase over its time (and both
// nothing: a ratio of 1), so that the ratio stays finite.
func sliceRatio(a, b Slice) float64 {
	ra, rb := a.BoughtPerS, b.BoughtPerS
	if ra > 0 && rb > 0 {
		return ra / rb
	}
	if a.Bought == 0 && b.Bought == 0 {
		return 1
	}
	half := func(s Slice) float64 {
		if s.Bought > 0 || s.ElapsedS <= 0 {
			return s.BoughtPerS
		}
		return 0.5 / s.ElapsedS
	}
	ra, rb = half(a), half(b)
	switch {
	case rb == 0:
		return math.Inf(1)
	case ra == 0:
		return 0
	}
	return ra / rb
}

// pairLogs is the pairing of the natural logs of the rounds' ratios.
func pairLogs(logs []float64) pairing {
	p := pairing{rounds: len(logs), lo: math.Inf(1), hi: math.Inf(-1), ciLo: 0, ciHi: math.Inf(1)}
	if p.rounds == 0 {
		p.ratio = math.NaN()
		return p
	}
	sum := 0.0
	for _, l := range logs {
		sum += l
		p.lo, p.hi = math.Min(p.lo, math.Exp(l)), math.Max(p.hi, math.Exp(l))
	}
	mean := sum / float64(p.rounds)
	p.ratio = math.Exp(mean)
	if p.rounds < minRounds || math.IsInf(mean, 0) || math.IsNaN(mean) {
		return p
	}
	ss := 0.0
	for _, l := range logs {
		ss += (l - mean) * (l - mean)
	}
	half := tQuantile975(p.rounds-1) * math.Sqrt(ss/float64(p.rounds-1)/float64(p.rounds))
	p.ciLo, p.ciHi = math.Exp(mean-half), math.Exp(mean+half)
	return p
}

// tTable is the 0.975 quantile of Student's t distribution for 1 to 30
// degrees of freedom.
var tTable = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// tQuantile975 is the 0.975 quantile of Student's t distribution with df
// degrees of freedom (df >= 1): from the table up to 30, beyond it the
// Cornish-Fisher expansion around the normal quantile, within 0.001.
func tQuantile975(df int) float64 {
	if df <= len(tTable) {
		return tTable[df-1]
	}
	const z = 1.959964
	n := float64(df)
	return z + (z*z*z+z)/(4*n) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*n*n)
}

// minRounds is the fewest paired slices from which a reading names a
// winner: with one, there is no spread to compare the difference with.
const minRounds = 2

// ahead reports whether a bought more than b beyond doubt: the whole
// confidence interval of the ratio lies above 1. More rounds narrow the
// interval, so a longer run can only sharpen what it says.
func (p pairing) ahead() bool { return p.rounds >= minRounds && p.ciLo > 1 }

// behind reports whether the whole interval lies below 1.
func (p pairing) behind() bool { return p.rounds >= minRounds && p.ciHi < 1 }

// result names the comparison: "ahead", "behind" or "cannot tell".
func (p pairing) result() string {
	switch {
	case p.ahead():
		return "ahead"
	case p.behind():
		return "behind"
	}
	return "cannot tell"
}

// text is the geometric mean ratio and its interval, "1.31× (95% CI
// 1.05–1.63, 10 rounds)", or the one ratio of a single round.
func (p pairing) text() string {
	switch {
	case p.rounds == 0:
		return "no round measured both"
	case p.rounds < minRounds || math.IsInf(p.ciHi, 1):
		return fmt.Sprintf("%s× over %s", fmtRatio(p.ratio), output.Plural(p.rounds, "round"))
	}
	return fmt.Sprintf("%s× (95%% CI %s–%s, %s)", fmtRatio(p.ratio), fmtRatio(p.ciLo), fmtRatio(p.ciHi),
		output.Plural(p.rounds, "round"))
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

// LoadSample is one reading of the 1-minute load average during a run.
type LoadSample struct {
	// AtS is the time since the run started, in seconds.
	AtS   float64 `json:"at_s"`
	Avg1m float64 `json:"load_avg_1m"`
}

// LoadEvery is how often a run reads the load average.
const LoadEvery = 5 * time.Second

// LoadText says the load at a run's start and end, and at its peak when
// the run sampled it, in one sentence, or "" for a document saved before
// loads were recorded.
func LoadText(start, end, peak *Load) string {
	var s string
	switch {
	case start == nil && end == nil:
		return ""
	case end == nil:
		s = "At the start: " + start.String()
	default:
		s = "At the start: " + start.String() + "; at the end: " + end.String()
	}
	if peak != nil {
		s += fmt.Sprintf("; at its peak (read every %v): %.2f", LoadEvery, peak.Avg1m)
	}
	return s + "."
}
