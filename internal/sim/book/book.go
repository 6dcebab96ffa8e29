// Package book holds the figures "Redis in Action" published for the
// marketplace (tables 6.1-6.3 and the chapter 11 Lua table), which the
// simulator's reports set beside their own.
package book

import (
	"time"

	"github.com/lockmarket/lockmarket/market"
)

// Duration is the length of each of the book's runs.
const Duration = 60 * time.Second

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

// Cell is the book's row for one scenario and strategy (60 s run).
type Cell struct {
	// Source names the table the row comes from.
	Source string
	// Listed, Bought and Retries are counts over 60 s.
	Listed, Bought, Retries Figure
	// AvgWaitMs is the average wait per purchase, in milliseconds.
	AvgWaitMs Figure
}

// UpperBounds names the fields the book printed only as bounds, by their
// JSON names (listed, bought, retries, avg_wait_ms).
func (c Cell) UpperBounds() []string {
	var out []string
	for _, f := range []struct {
		name string
		fig  Figure
	}{{"listed", c.Listed}, {"bought", c.Bought}, {"retries", c.Retries}, {"avg_wait_ms", c.AvgWaitMs}} {
		if f.fig.UpperBound() {
			out = append(out, f.name)
		}
	}
	return out
}

// key is a scenario (listers x buyers) and a strategy.
type key struct {
	listers, buyers int
	st              market.Strategy
}

func n(v float64) Figure  { return Figure{Value: v} }
func lt(v float64) Figure { return Figure{Value: v, Qualifier: "<"} }

// cells is "Redis in Action" tables 6.1-6.3 and the chapter 11 Lua
// table (market over 60 seconds), as published.
var cells = map[key]Cell{
	{1, 1, market.Watch}:  {"table 6.1", n(145_000), n(27_000), n(80_000), n(14)},
	{1, 1, market.Coarse}: {"table 6.2", n(51_000), n(50_000), n(0), n(1)},
	{1, 1, market.Fine}:   {"table 6.3", n(113_000), n(110_000), n(0), lt(1)},
	{5, 1, market.Watch}:  {"table 6.1", n(331_000), lt(200), n(50_000), n(150)},
	{5, 1, market.Coarse}: {"table 6.2", n(68_000), n(13_000), lt(10), n(5)},
	{5, 1, market.Fine}:   {"table 6.3", n(192_000), n(36_000), n(0), lt(2)},
	{5, 5, market.Watch}:  {"table 6.1", n(206_000), lt(600), n(161_000), n(498)},
	{5, 5, market.Coarse}: {"table 6.2", n(21_000), n(20_500), n(0), n(14)},
	{5, 5, market.Fine}:   {"table 6.3", n(116_000), n(111_000), n(0), lt(3)},
	{5, 5, market.Lua}:    {"chapter 11 table", n(505_000), n(480_000), n(0), lt(1)},
}

// Lookup returns the book's figures for a scenario of listers and buyers
// under a strategy, if it published any (nine cells of tables 6.1-6.3 and
// the Lua 5x5 cell).
func Lookup(listers, buyers int, st market.Strategy) (Cell, bool) {
	c, ok := cells[key{listers, buyers, st}]
	return c, ok
}
