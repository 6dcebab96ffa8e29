package sim

import (
	"math"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/market"
)

func TestConflictModel(t *testing.T) {
	tests := []struct {
		name string
		res  Result
		// want
		ok                  bool
		rate                float64 // λ, per second
		window              time.Duration
		exposure, predicted float64
		measured, retries   float64
		modelErr            float64
		errOK               bool
	}{
		{
			// The book's 5x1 WATCH cell, with a window of 1 ms: 331,000
			// listings in 60 s, one buyer (none of its own purchases count).
			name: "book 5x1, 1 ms window",
			res: Result{Strategy: market.Watch, Scenario: Scenario{5, 1}, Elapsed: 60 * time.Second,
				Listed: 331_000, Bought: 200, Retries: 50_000, Execs: 50_200, Window: 50_200 * time.Millisecond},
			ok: true, rate: 331_000.0 / 60, window: time.Millisecond,
			exposure: 5.516667, predicted: math.Exp(-5.516667),
			measured: 200.0 / 50_200, retries: math.Exp(5.516667) - 1,
			modelErr: math.Exp(-5.516667)/(200.0/50_200) - 1, errOK: true,
		},
		{
			// 5 buyers: each sees the other four's purchases, not its own.
			name: "5x5, own purchases excluded",
			res: Result{Strategy: market.Watch, Scenario: Scenario{5, 5}, Elapsed: 10 * time.Second,
				Listed: 9_000, Bought: 1_000, Retries: 1_000, Execs: 2_000, Window: 2_000 * 100 * time.Microsecond},
			ok: true, rate: (9_000 + 1_000*4.0/5) / 10, window: 100 * time.Microsecond,
			exposure: 0.098, predicted: math.Exp(-0.098), measured: 0.5, retries: math.Exp(0.098) - 1,
			modelErr: math.Exp(-0.098)/0.5 - 1, errOK: true,
		},
		{
			// Two markets: the rate is per market.
			name: "two markets",
			res: Result{Strategy: market.Watch, Scenario: Scenario{1, 1}, Elapsed: 10 * time.Second,
				Markets: []string{"a", "b"}, Listed: 2_000, Bought: 2_000, Retries: 0, Execs: 2_000,
				Window: 2_000 * time.Millisecond},
			ok: true, rate: 100, window: time.Millisecond,
			exposure: 0.1, predicted: math.Exp(-0.1), measured: 1, retries: math.Exp(0.1) - 1,
			modelErr: math.Exp(-0.1) - 1, errOK: true,
		},
		{
			// Nothing committed: the error is unbounded.
			name: "no commit",
			res: Result{Strategy: market.Watch, Scenario: Scenario{5, 1}, Elapsed: time.Second,
				Listed: 1_000, Retries: 10, Execs: 10, Window: 10 * time.Millisecond},
			ok: true, rate: 1_000, window: time.Millisecond,
			exposure: 1, predicted: math.Exp(-1), measured: 0, retries: math.E - 1, errOK: false,
		},
		{
			name: "not watch",
			res:  Result{Strategy: market.Fine, Scenario: Scenario{1, 1}, Elapsed: time.Second, Listed: 5, Execs: 1},
		},
		{
			name: "no exec",
			res:  Result{Strategy: market.Watch, Scenario: Scenario{1, 1}, Elapsed: time.Second, Listed: 5},
		},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := tt.res.Conflict()
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if !near(c.WriteRate, tt.rate) || c.Window != tt.window {
				t.Fatalf("λ = %v, w = %v; want %v, %v", c.WriteRate, c.Window, tt.rate, tt.window)
			}
			if !near(c.Exposure(), tt.exposure) || !near(c.Predicted(), tt.predicted) {
				t.Fatalf("λw = %v, P = %v; want %v, %v", c.Exposure(), c.Predicted(), tt.exposure, tt.predicted)
			}
			if m, _ := c.Measured(); !near(m, tt.measured) {
				t.Fatalf("measured P = %v, want %v", m, tt.measured)
			}
			if !near(c.PredictedRetries(), tt.retries) {
				t.Fatalf("predicted retries = %v, want %v", c.PredictedRetries(), tt.retries)
			}
			e, eok := c.Error()
			if eok != tt.errOK || (eok && !near(e, tt.modelErr)) {
				t.Fatalf("error = %v (%v), want %v (%v)", e, eok, tt.modelErr, tt.errOK)
			}
		})
	}
}
