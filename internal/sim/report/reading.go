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
// A strategy is named the winner over another only when the 95%
// confidence interval of the ratio of their purchases per second, over
// the rounds the two ran (at least minRounds), lies wholly above 1: the
// slices of a round run one after the other, so a change in the
// machine's load hits both, and the interval narrows as rounds are added,
// so that more rounds sharpen the verdict rather than weaken it. On
// miniredis, which serves one command at a time inside the simulator's
// process, the reading is the one line saying the figures are
// illustrative, with no verdict. Lines are wrapped to output.Width. A
// document with no cell that bought anything has no reading.
func Reading(doc Document) []string {
	lines, _ := read(doc)
	return lines
}

// Verdict is a reading's conclusion in the JSON document: the verdict
// line and, per scenario, the comparisons it rests on with their
// intervals.
type Verdict struct {
	// Text is the verdict line, or the illustrative line on miniredis.
	Text string `json:"text"`
	// Confidence is the level of every interval, 0.95.
	Confidence float64 `json:"confidence"`
	// Scenarios is one entry per scenario with a purchase (none on
	// miniredis).
	Scenarios []ScenarioVerdict `json:"scenarios"`
}

// ScenarioVerdict is what the run says of one scenario.
type ScenarioVerdict struct {
	Scenario string `json:"scenario"`
	// Winner is the strategy that bought most beyond the intervals, or
	// empty where the run cannot tell.
	Winner string `json:"winner,omitempty"`
	// Comparisons pair the strategy that bought most with each other;
	// WatchVsLock pairs WATCH with the best lock strategy, where the
	// scenario ran both.
	Comparisons []Comparison `json:"comparisons"`
	WatchVsLock *Comparison  `json:"watch_vs_lock,omitempty"`
}

// Comparison is the ratio of A's purchases per second to B's over the
// rounds both ran: its geometric mean and confidence interval, and
// whether A is "ahead", "behind" or the run "cannot tell".
type Comparison struct {
	A       string  `json:"a"`
	B       string  `json:"b"`
	Rounds  int     `json:"rounds"`
	Ratio   float64 `json:"ratio"`
	RatioLo float64 `json:"ratio_lo"`
	// RatioHi is absent when the interval is unbounded (fewer than two
	// rounds).
	RatioHi *float64 `json:"ratio_hi,omitempty"`
	Result  string   `json:"result"`
}

// comparison is p as the Comparison of a with b.
func comparison(a, b string, p pairing) Comparison {
	c := Comparison{A: a, B: b, Rounds: p.rounds, Ratio: round3(p.ratio), RatioLo: round3(p.ciLo),
		Result: p.result()}
	if math.IsNaN(p.ratio) || math.IsInf(p.ratio, 0) {
		c.Ratio = 0
	}
	if !math.IsInf(p.ciHi, 1) {
		hi := round3(p.ciHi)
		c.RatioHi = &hi
	}
	return c
}

// Judge is doc's verdict, nil where it has no reading.
func Judge(doc Document) *Verdict {
	_, v := read(doc)
	return v
}

// read is doc's reading and its verdict.
func read(doc Document) ([]string, *Verdict) {
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
		return nil, nil
	}
	if doc.Illustrative {
		return wrap(IllustrativeReading), &Verdict{Text: IllustrativeReading, Confidence: Confidence,
			Scenarios: []ScenarioVerdict{}}
	}
	var lines []string
	var v verdict
	out := &Verdict{Confidence: Confidence, Scenarios: []ScenarioVerdict{}}
	for _, sc := range scenarios {
		rows := byScenario[sc]
		best := slices.MaxFunc(rows, func(a, b Row) int { return cmpFloat(a.BoughtPerS, b.BoughtPerS) })
		if best.Bought == 0 {
			continue
		}
		v.scenarios++
		b := new(strings.Builder)
		v.rounds = max(v.rounds, len(best.Slices))
		sv := scenarioSentence(b, sc, best, rows, &v)
		if w, ok := find(rows, market.Watch); ok {
			b.WriteString(" " + watchSentence(w))
			if lock, ok := bestLock(rows); ok {
				c := comparison(w.Strategy, lock.Strategy, v.add(sc, w, lock))
				sv.WatchVsLock = &c
			}
		}
		out.Scenarios = append(out.Scenarios, sv)
		lines = append(lines, wrap(b.String())...)
	}
	if len(lines) == 0 {
		return nil, nil
	}
	out.Text = v.String()
	lines = append(lines, wrap(out.Text)...)
	if len(v.undecided)+len(v.watchUnclear) > 0 {
		lines = append(lines, wrap(advice(doc, v.rounds))...)
	}
	return lines, out
}

// IllustrativeReading is the whole reading of a run on miniredis.
const IllustrativeReading = "miniredis serves one command at a time inside this process: these figures are " +
	"illustrative only, and no verdict is drawn from them; run against redis-server (-redis auto " +
	"finds one on PATH) to compare the strategies."

// scenarioSentence writes the sentence of one scenario: the strategy that
// bought most if the interval of its ratio to every other lies above 1
// (with the closest of those ratios), else which strategies the run cannot
// tell apart; then each one's purchases per second with their range. It
// returns the scenario's part of the verdict.
func scenarioSentence(b *strings.Builder, sc string, best Row, rows []Row, v *verdict) ScenarioVerdict {
	sv := ScenarioVerdict{Scenario: sc, Comparisons: []Comparison{}}
	var close []string // the strategies the best is not beyond doubt ahead of
	var closeText []string
	nearest, nearestText := math.Inf(1), ""
	for _, r := range rows {
		if r.Strategy == best.Strategy {
			continue
		}
		p := pair(best, r)
		sv.Comparisons = append(sv.Comparisons, comparison(best.Strategy, r.Strategy, p))
		text := fmt.Sprintf("%s/%s %s", best.Strategy, r.Strategy, p.text())
		if !p.ahead() {
			close = append(close, r.Strategy)
			closeText = append(closeText, text)
		} else if p.ciLo < nearest {
			nearest, nearestText = p.ciLo, text
		}
	}
	switch {
	case len(rows) == 1:
		fmt.Fprintf(b, "%s: %s", sc, best.Strategy)
	case len(close) == 0:
		v.wins = append(v.wins, best.Strategy)
		sv.Winner = best.Strategy
		fmt.Fprintf(b, "%s: %s bought most (closest: %s): %s", sc, best.Strategy, nearestText, best.Strategy)
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
	return sv
}

// advice says what to do when the run could not tell strategies apart,
// with the load it ran at.
func advice(doc Document, rounds int) string {
	more := fmt.Sprintf("-rounds %d", max(2*rounds, 5))
	s := fmt.Sprintf("Where the run cannot tell, the interval of the ratio still spans 1: "+
		"measure longer (-duration %gs), in more rounds (%s), or on a quieter machine.",
		max(2*doc.DurationS, 60), more)
	if doc.LoadStart != nil && doc.LoadEnd != nil {
		s += fmt.Sprintf(" This one ran at a load average of %.1f at the start and %.1f at the end",
			doc.LoadStart.Avg1m, doc.LoadEnd.Avg1m)
		if doc.LoadPeak != nil {
			s += fmt.Sprintf(", %.1f at its peak", doc.LoadPeak.Avg1m)
		}
		s += fmt.Sprintf(", on %s.", output.Plural(doc.LoadStart.CPUs, "CPU"))
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
	// wins is the strategy that bought most beyond its intervals, per scenario
	// where the run could tell; undecided the scenarios where it could
	// not.
	wins, undecided []string
	// watchAhead and watchBehind are the scenarios where WATCH bought more
	// than the best lock strategy beyond the interval, or less, with the
	// figures; watchUnclear those where the rounds disagree; locks the
	// lock strategies WATCH fell behind.
	watchAhead, watchBehind, watchUnclear, locks []string
	// aheadMax and behindMin are the largest λ·w where WATCH was ahead
	// and the smallest where it fell behind (NaN: unknown).
	aheadMax, behindMin float64
	exposures           int
}

// add compares a scenario's WATCH row with its best lock row, round by
// round, and returns the comparison.
func (v *verdict) add(sc string, w, lock Row) pairing {
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
		return p
	}
	if w.Conflict != nil {
		v.exposures++
	}
	return p
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
		fmt.Fprintf(&b, "WATCH beat the locks where the run can tell (%s): "+
			"its retries cost less than waiting for a lock", strings.Join(v.watchAhead, ", "))
	case len(v.watchAhead) == 0:
		fmt.Fprintf(&b, "a lock (%s) beat WATCH where the run can tell (%s): "+
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
