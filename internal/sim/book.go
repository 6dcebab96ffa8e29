package sim

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/market"
)

// BookDuration is the length of each of the book's runs.
const BookDuration = 60 * time.Second

// Figure is one published number. Some were printed as bounds ("<200",
// "<1ms"); Qualifier keeps the "<" so that a bound is never shown as a
// measurement.
type Figure struct {
	Value     float64
	Qualifier string // "" or "<"
}

// UpperBound reports whether the book printed only a bound ("<").
func (f Figure) UpperBound() bool { return f.Qualifier == "<" }

// Scale returns the figure multiplied by k, keeping the qualifier.
func (f Figure) Scale(k float64) Figure { return Figure{Value: f.Value * k, Qualifier: f.Qualifier} }

// Count formats the figure as a whole number with thousands separators,
// e.g. "145,000" or "<200". A bound is rounded up, so that a scaled "<10"
// reads "<1", never "<0".
func (f Figure) Count() string {
	if f.UpperBound() {
		return f.Qualifier + Thousands(int64(math.Ceil(f.Value-1e-9)))
	}
	return Thousands(int64(math.Round(f.Value)))
}

// BookCell is the book's row for one scenario and strategy (60 s run).
type BookCell struct {
	// Source names the table the row comes from.
	Source string
	// Listed, Bought and Retries are counts over 60 s.
	Listed, Bought, Retries Figure
	// AvgWaitMs is the average wait per purchase, in milliseconds.
	AvgWaitMs Figure
}

// Published returns the row's figures as printed in the book.
func (b BookCell) Published() map[string]string {
	return map[string]string{
		"listed":   b.Listed.Count(),
		"bought":   b.Bought.Count(),
		"retries":  b.Retries.Count(),
		"avg_wait": b.AvgWaitMs.Qualifier + trimFloat(b.AvgWaitMs.Value) + "ms",
	}
}

// UpperBounds names the fields the book printed only as bounds.
func (b BookCell) UpperBounds() []string {
	var out []string
	for _, f := range []struct {
		name string
		fig  Figure
	}{{"listed", b.Listed}, {"bought", b.Bought}, {"retries", b.Retries}, {"avg_wait", b.AvgWaitMs}} {
		if f.fig.UpperBound() {
			out = append(out, f.name)
		}
	}
	return out
}

type bookKey struct {
	sc Scenario
	st market.Strategy
}

func n(v float64) Figure  { return Figure{Value: v} }
func lt(v float64) Figure { return Figure{Value: v, Qualifier: "<"} }

// bookCells is "Redis in Action" tables 6.1-6.3 and the chapter 11 Lua
// table (market over 60 seconds), as published.
var bookCells = map[bookKey]BookCell{
	{Scenario{1, 1}, market.Watch}:  {"table 6.1", n(145_000), n(27_000), n(80_000), n(14)},
	{Scenario{1, 1}, market.Coarse}: {"table 6.2", n(51_000), n(50_000), n(0), n(1)},
	{Scenario{1, 1}, market.Fine}:   {"table 6.3", n(113_000), n(110_000), n(0), lt(1)},
	{Scenario{5, 1}, market.Watch}:  {"table 6.1", n(331_000), lt(200), n(50_000), n(150)},
	{Scenario{5, 1}, market.Coarse}: {"table 6.2", n(68_000), n(13_000), lt(10), n(5)},
	{Scenario{5, 1}, market.Fine}:   {"table 6.3", n(192_000), n(36_000), n(0), lt(2)},
	{Scenario{5, 5}, market.Watch}:  {"table 6.1", n(206_000), lt(600), n(161_000), n(498)},
	{Scenario{5, 5}, market.Coarse}: {"table 6.2", n(21_000), n(20_500), n(0), n(14)},
	{Scenario{5, 5}, market.Fine}:   {"table 6.3", n(116_000), n(111_000), n(0), lt(3)},
	{Scenario{5, 5}, market.Lua}:    {"chapter 11 table", n(505_000), n(480_000), n(0), lt(1)},
}

// Book returns the book's figures for a scenario and strategy, if it
// published any (nine cells of tables 6.1-6.3 and the Lua 5x5 cell).
func Book(sc Scenario, st market.Strategy) (BookCell, bool) {
	b, ok := bookCells[bookKey{sc, st}]
	return b, ok
}

// Thousands formats n with commas between groups of three digits.
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}
