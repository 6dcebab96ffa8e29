package sim

import (
	"math"
	"time"

	"github.com/lockmarket/lockmarket/market"
)

// Conflict is what a cell measured of the Watch strategy's purchases,
// beside what the simple model of an optimistic transaction predicts: if
// writes to the keys a purchase WATCHes arrive at random (a Poisson
// stream) at rate λ, an EXEC whose conflict window lasts w commits when
// none arrived in it, with probability e^(−λ·w).
type Conflict struct {
	// WriteRate is λ, per second: the writes that land on the keys a
	// purchase WATCHes (the market's ZSET and the buyer's hash) from
	// clients other than the buyer, averaged over the buyers. Every
	// acknowledged listing writes the ZSET once and every acknowledged
	// purchase once (its ZREM, in the same EXEC as the buyer's HINCRBY),
	// so λ = (listed + bought·(B−1)/B) / (markets · elapsed) for B buyers
	// per market.
	WriteRate float64
	// Window is w: the mean conflict window of the purchases' EXECs
	// (markettrace.Trace.Exec).
	Window time.Duration
	// Execs is how many EXECs the purchases sent; Aborted how many of
	// them WATCH aborted (the retries).
	Execs, Aborted int64
}

// Conflict returns the cell's Conflict; ok is false unless the cell ran
// the Watch strategy and sent at least one EXEC.
func (r Result) Conflict() (c Conflict, ok bool) {
	if r.Strategy != market.Watch || r.Execs == 0 || r.Elapsed <= 0 {
		return Conflict{}, false
	}
	markets := max(len(r.Markets), 1)
	b := float64(r.Scenario.Buyers)
	others := float64(r.Listed) + float64(r.Bought)*(b-1)/b
	return Conflict{
		WriteRate: others / (float64(markets) * r.Elapsed.Seconds()),
		Window:    r.Window / time.Duration(r.Execs),
		Execs:     r.Execs,
		Aborted:   r.Retries,
	}, true
}

// Exposure is λ·w, the writes expected to land in one window.
func (c Conflict) Exposure() float64 { return c.WriteRate * c.Window.Seconds() }

// Predicted is the model's probability that an EXEC commits, e^(−λ·w).
func (c Conflict) Predicted() float64 { return math.Exp(-c.Exposure()) }

// Measured is the fraction of EXECs that committed; ok is false without
// EXECs.
func (c Conflict) Measured() (p float64, ok bool) {
	if c.Execs <= 0 {
		return 0, false
	}
	return float64(c.Execs-c.Aborted) / float64(c.Execs), true
}

// PredictedRetries is the retries per committed EXEC the model expects:
// an EXEC commits with probability P, so it takes 1/P attempts, 1/P − 1
// of them aborted.
func (c Conflict) PredictedRetries() float64 { return 1/c.Predicted() - 1 }

// Error is how far the model is off: Predicted/Measured − 1 (0.5: the
// model expects half again as many commits as happened; −0.5: half as
// many). ok is false when nothing committed, where any positive
// prediction is off by an unbounded factor.
func (c Conflict) Error() (e float64, ok bool) {
	p, ok := c.Measured()
	if !ok || p == 0 {
		return 0, false
	}
	return c.Predicted()/p - 1, true
}
