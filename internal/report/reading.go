package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/market"
)

// Reading is what a run's figures say, in a few lines computed from them:
// for each scenario, the strategy that bought most, if the run can tell,
// with every strategy's purchases per second and their range over the
// slices, and, when the run has a WATCH cell, its retries per purchase
// with the write rate and the conflict window that explain them (and what
// the model e^(−λ·w) makes of them); then a one-line verdict, "which
// strategy, when", that follows from those comparisons, and what to do
// where the run could not tell.
//
// A strategy is named the winner over another only when it bought more
// in every round the two ran (at least minRounds): the slices of a round
// run one after the other, so a change in the machine's load hits both,
// and a difference smaller than the spread across rounds shows as a
// round the other won. On miniredis, which serves one command at a time
// inside the simulator's process, the reading is the one line saying the
// figures are illustrative, with no verdict. Lines are wrapped to
// output.Width. A document with no cell that bought anything has no
// reading.
func Reading(doc Document) []string {
	var scenarios []string
	byScenario := map[string][]Row{}
	bought := false
	for _, r := range doc.Rows {
		if _, ok := byScenario[r.Label()]; !ok {
			scenarios = append(scenarios, r.Label())
		}
		byScenario[r.Label()] = append(byScenario[r.Label()], r)
		bought = bought || r.Bought > 0
	}
	if !bought {
		return nil
	}
	if doc.Illustrative {
		return wrap(IllustrativeReading)
	}
	var lines []string
	var v verdict
	for _, sc := range scenarios {
		rows := byScenario[sc]
		best := slices.MaxFunc(rows, func(a, b Row) int { return cmpFloat(a.BoughtPerS, b.BoughtPerS) })
		if best.Bought == 0 {
			continue
		}
		v.scenarios++
		b := new(strings.Builder)
		v.rounds = max(v.rounds, len(best.Slices))
		scenarioSentence(b, sc, best, rows, &v)
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
	lines = append(lines, wrap(v.String())...)
	if len(v.undecided)+len(v.watchUnclear) > 0 {
		lines = append(lines, wrap(advice(doc, v.rounds))...)
	}
	return lines
}

// IllustrativeReading is the whole reading of a run on miniredis.
const IllustrativeReading = "miniredis serves one command at a time inside this process: these figures are " +
	"illustrative only, and no verdict is drawn from them; run against redis-server (-redis auto " +
	"finds one on PATH) to compare the strategies."

// scenarioSentence writes the sentence of one scenario: the strategy that
// bought most if it did so in every round against every other, else
// which strategies the run cannot tell apart; then each one's purchases
// per second with their range.
func scenarioSentence(b *strings.Builder, sc string, best Row, rows []Row, v *verdict) {
	var close []string // the strategies the best did not beat in every round
	var closeText []string
	for _, r := range rows {
		if r.Strategy == best.Strategy {
			continue
		}
		if p := pair(best, r); !p.ahead() {
			close = append(close, r.Strategy)
			closeText = append(closeText, fmt.Sprintf("%s/%s %s", best.Strategy, r.Strategy, p.text()))
		}
	}
	switch {
	case len(rows) == 1:
		fmt.Fprintf(b, "%s: %s", sc, best.Strategy)
	case len(close) == 0:
		v.wins = append(v.wins, best.Strategy)
		fmt.Fprintf(b, "%s: %s bought most, in every round (%s): %s", sc, best.Strategy,
			output.Count(len(best.Slices), "round"), best.Strategy)
	default:
		v.undecided = append(v.undecided, sc)
		fmt.Fprintf(b, "%s: the run cannot tell %s from %s (%s): %s", sc, best.Strategy,
			strings.Join(close, " or "), strings.Join(closeText, ", "), best.Strategy)
	}
	fmt.Fprintf(b, " %s", best.boughtRange())
	for _, r := range rows {
		if r.Strategy != best.Strategy {
			fmt.Fprintf(b, ", %s %s", r.Strategy, r.boughtRange())
		}
	}
	b.WriteString(".")
}

// advice says what to do when the run could not tell strategies apart,
// with the load it ran at.
func advice(doc Document, rounds int) string {
	more := fmt.Sprintf("-rounds %d", max(2*rounds, 5))
	s := fmt.Sprintf("Where the run cannot tell, the difference lies within the spread across rounds: "+
		"measure longer (-duration %gs), in more rounds (%s), or on a quieter machine.",
		max(2*doc.DurationS, 60), more)
	if doc.LoadStart != nil && doc.LoadEnd != nil {
		s += fmt.Sprintf(" This one ran at a load average of %.1f at the start and %.1f at the end, on %s.",
			doc.LoadStart.Avg1m, doc.LoadEnd.Avg1m, output.Count(doc.LoadStart.CPUs, "CPU"))
	}
	return s
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
	// scenarios counts the scenarios with a purchase; rounds is the most
	// slices a cell of them had.
	scenarios, rounds int
	// wins is the strategy that bought most in every round, per scenario
	// where the run could tell; undecided the scenarios where it could
	// not.
	wins, undecided []string
	// watchAhead and watchBehind are the scenarios where WATCH bought more
	// than the best lock strategy in every round, or less, with the
	// figures; watchUnclear those where the rounds disagree; locks the
	// lock strategies WATCH fell behind.
	watchAhead, watchBehind, watchUnclear, locks []string
	// aheadMax and behindMin are the largest λ·w where WATCH was ahead
	// and the smallest where it fell behind (NaN: unknown).
	aheadMax, behindMin float64
	exposures           int
}

// add compares a scenario's WATCH row with its best lock row, round by
// round.
func (v *verdict) add(sc string, w, lock Row) {
	p := pair(w, lock)
	fig := fmt.Sprintf("%s watch/%s %s", sc, lock.Strategy, p.text())
	x := math.NaN()
	if w.Conflict != nil {
		x = w.Conflict.Exposure
		fig += " at λ·w " + fmtRatio(x)
	}
	switch {
	case p.ahead():
		v.watchAhead = append(v.watchAhead, fig)
		v.aheadMax = nanMax(v.aheadMax, x, len(v.watchAhead) == 1)
	case p.behind():
		v.watchBehind = append(v.watchBehind, fig)
		v.locks = append(v.locks, lock.Strategy)
		v.behindMin = -nanMax(-v.behindMin, -x, len(v.watchBehind) == 1)
	default:
		v.watchUnclear = append(v.watchUnclear, fig)
		return
	}
	if w.Conflict != nil {
		v.exposures++
	}
}

// String is the verdict line.
func (v verdict) String() string {
	var b strings.Builder
	b.WriteString("Verdict: ")
	top, n := mostFrequent(v.wins)
	switch {
	case n == 0:
		b.WriteString("the run cannot tell which strategy bought most in any scenario")
	default:
		fmt.Fprintf(&b, "%s bought most in %d of %d scenarios", top, n, v.scenarios)
		if len(v.undecided) > 0 {
			fmt.Fprintf(&b, " (the run cannot tell in %s)", strings.Join(v.undecided, ", "))
		}
		if top == string(market.Lua) && n == v.scenarios {
			b.WriteString(", so use it wherever the logic fits a script")
		}
	}
	decided := len(v.watchAhead) + len(v.watchBehind)
	if decided+len(v.watchUnclear) == 0 {
		return b.String() + "."
	}
	b.WriteString("; ")
	lock, _ := mostFrequent(v.locks)
	switch {
	case decided == 0:
	case len(v.watchBehind) == 0:
		fmt.Fprintf(&b, "WATCH beat the locks in every round where the run can tell (%s): "+
			"its retries cost less than waiting for a lock", strings.Join(v.watchAhead, ", "))
	case len(v.watchAhead) == 0:
		fmt.Fprintf(&b, "a lock (%s) beat WATCH in every round where the run can tell (%s): "+
			"at these write rates and windows, lock instead of retrying", lock, strings.Join(v.watchBehind, ", "))
	default:
		where := "it fell behind"
		if v.exposures == decided && v.behindMin > v.aheadMax {
			where = "λ·w grew"
		}
		fmt.Fprintf(&b, "WATCH where it was ahead (%s), a lock (%s) where %s (%s)",
			strings.Join(v.watchAhead, ", "), lock, where, strings.Join(v.watchBehind, ", "))
	}
	if len(v.watchUnclear) > 0 {
		if decided > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "the run cannot tell WATCH from the best lock in %s", strings.Join(v.watchUnclear, ", "))
	}
	return b.String() + "."
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
	return output.Thousands(int64(math.Round(v)))
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

// wrap breaks s into lines of at most output.Width columns.
func wrap(s string) []string { return strings.Split(output.Wrap(s, output.Width), "\n") }
