package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lockmarket/lockmarket/internal/schema"
	"github.com/lockmarket/lockmarket/market"
)

// Reading is what a run's figures say, in a few lines computed from them:
// for each scenario, the strategy that bought most and, when the run has
// a WATCH cell, its retries per purchase with the write rate and the
// conflict window that explain them (and what the model e^(−λ·w) makes of
// them); then a one-line verdict, "which strategy, when", that follows
// from those comparisons. Lines are wrapped to schema.Width. A document
// with no cell that bought anything has no reading.
func Reading(doc Document) []string {
	var scenarios []string
	byScenario := map[string][]Row{}
	for _, r := range doc.Rows {
		if _, ok := byScenario[r.Label()]; !ok {
			scenarios = append(scenarios, r.Label())
		}
		byScenario[r.Label()] = append(byScenario[r.Label()], r)
	}
	var lines []string
	var v verdict
	for _, sc := range scenarios {
		rows := byScenario[sc]
		best := slices.MaxFunc(rows, func(a, b Row) int { return cmpFloat(a.BoughtPerS, b.BoughtPerS) })
		if best.Bought == 0 {
			continue
		}
		v.wins = append(v.wins, best.Strategy)
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %s bought most (%s/s", sc, best.Strategy, count(best.BoughtPerS))
		for _, r := range rows {
			if r.Strategy != best.Strategy {
				fmt.Fprintf(&b, ", %s %s", r.Strategy, count(r.BoughtPerS))
			}
		}
		b.WriteString(").")
		if w, ok := find(rows, market.Watch); ok {
			b.WriteString(" " + watchSentence(w))
			if lock, ok := bestLock(rows); ok {
				v.add(sc, w, lock)
			}
		}
		lines = append(lines, wrap(b.String())...)
	}
	if len(lines) == 0 {
		return nil
	}
	return append(lines, wrap(v.String())...)
}

// watchSentence explains a WATCH row's retries by its write rate and
// window.
func watchSentence(w Row) string {
	rpp := "no purchase"
	if w.RetriesPerPurchase != nil {
		rpp = fmtRatio(*w.RetriesPerPurchase) + " retries per purchase"
	}
	c := w.Conflict
	if c == nil {
		return "watch: " + rpp + "."
	}
	s := fmt.Sprintf("watch: %s; %s writes/s to the keys it WATCHes (λ) and a %s window (w) "+
		"give λ·w = %s: the model e^(−λ·w) expects %s of EXECs to commit",
		rpp, count(c.WriteRatePerS), fmtMs(c.WindowMs, 1), fmtRatio(c.Exposure), pct(c.PCommitModel))
	return s + fmt.Sprintf(", %s did.", pct(c.PCommit))
}

// verdict gathers the comparisons the run's closing line rests on.
type verdict struct {
	// wins is the strategy that bought most, per scenario.
	wins []string
	// watchAhead and watchBehind are the scenarios where WATCH bought at
	// least keptUp times as much as the best lock strategy, or less, with
	// the figures;
	// locks the lock strategies WATCH fell behind.
	watchAhead, watchBehind, locks []string
	// aheadMax and behindMin are the largest λ·w where WATCH kept up and
	// the smallest where it fell behind (NaN: unknown).
	aheadMax, behindMin float64
	exposures           int
}

// keptUp is the least ratio of WATCH's purchases to the best lock
// strategy's at which the verdict says WATCH kept up: one run's figures
// move by more than a tenth (results/README.md, "How much to trust a
// single run"), so a smaller gap is not a lock beating WATCH.
const keptUp = 0.9

// add compares a scenario's WATCH row with its best lock row.
func (v *verdict) add(sc string, w, lock Row) {
	ratio := math.Inf(1)
	if lock.BoughtPerS > 0 {
		ratio = w.BoughtPerS / lock.BoughtPerS
	}
	fig := fmt.Sprintf("%s watch/%s %s×", sc, lock.Strategy, fmtRatio(ratio))
	x := math.NaN()
	if w.Conflict != nil {
		x = w.Conflict.Exposure
		fig += " at λ·w " + fmtRatio(x)
		v.exposures++
	}
	if ratio >= keptUp {
		v.watchAhead = append(v.watchAhead, fig)
		v.aheadMax = nanMax(v.aheadMax, x, len(v.watchAhead) == 1)
	} else {
		v.watchBehind = append(v.watchBehind, fig)
		v.locks = append(v.locks, lock.Strategy)
		v.behindMin = -nanMax(-v.behindMin, -x, len(v.watchBehind) == 1)
	}
}

// String is the verdict line.
func (v verdict) String() string {
	var b strings.Builder
	b.WriteString("Verdict: ")
	top, n := mostFrequent(v.wins)
	fmt.Fprintf(&b, "%s bought most in %d of %d scenarios", top, n, len(v.wins))
	if top == string(market.Lua) {
		b.WriteString(", so use it wherever the logic fits a script")
	}
	if len(v.watchAhead)+len(v.watchBehind) == 0 {
		return b.String() + "."
	}
	b.WriteString("; ")
	lock, _ := mostFrequent(v.locks)
	switch {
	case len(v.watchBehind) == 0:
		fmt.Fprintf(&b, "WATCH kept up with the locks everywhere (%s): "+
			"its conflicts were too rare to matter.", strings.Join(v.watchAhead, ", "))
	case len(v.watchAhead) == 0:
		fmt.Fprintf(&b, "a lock (%s) beat WATCH everywhere (%s): "+
			"at these write rates and windows, lock instead of retrying.", lock, strings.Join(v.watchBehind, ", "))
	default:
		where := "it fell behind"
		if v.exposures == len(v.watchAhead)+len(v.watchBehind) && v.behindMin > v.aheadMax {
			where = "λ·w grew"
		}
		fmt.Fprintf(&b, "WATCH where it kept up (%s), a lock (%s) where %s (%s).",
			strings.Join(v.watchAhead, ", "), lock, where, strings.Join(v.watchBehind, ", "))
	}
	return b.String()
}

// nanMax is the larger of acc and x; first means acc holds nothing yet.
// A NaN on either side makes the result NaN (unknown).
func nanMax(acc, x float64, first bool) float64 {
	if first {
		return x
	}
	return math.Max(acc, x)
}

// bestLock is the lock strategy (coarse or fine) that bought most.
func bestLock(rows []Row) (Row, bool) {
	var best Row
	ok := false
	for _, r := range rows {
		if r.Strategy != string(market.Coarse) && r.Strategy != string(market.Fine) {
			continue
		}
		if !ok || r.BoughtPerS > best.BoughtPerS {
			best, ok = r, true
		}
	}
	return best, ok
}

func find(rows []Row, s market.Strategy) (Row, bool) {
	for _, r := range rows {
		if r.Strategy == string(s) {
			return r, true
		}
	}
	return Row{}, false
}

// mostFrequent is the most frequent of names, the first seen on a tie.
func mostFrequent(names []string) (string, int) {
	best, n := "", 0
	for _, name := range names {
		if c := countOf(names, name); c > n {
			best, n = name, c
		}
	}
	return best, n
}

func countOf(names []string, name string) int {
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// count formats a rate as a whole number with thousands separators, or
// with one decimal below 10.
func count(v float64) string {
	if v < 10 {
		return trimZeros(fmt.Sprintf("%.1f", v))
	}
	return Thousands(int64(math.Round(v)))
}

// pct formats a probability as a percentage with two significant digits.
func pct(p float64) string {
	v := 100 * p
	switch {
	case v == 0:
		return "0%"
	case v >= 10:
		return fmt.Sprintf("%.0f%%", v)
	case v >= 1:
		return trimZeros(fmt.Sprintf("%.1f", v)) + "%"
	}
	return fmt.Sprintf("%.2g%%", v)
}

// wrap breaks s into lines of at most schema.Width columns.
func wrap(s string) []string { return strings.Split(schema.Wrap(s, schema.Width), "\n") }
