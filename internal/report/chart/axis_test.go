package chart

import (
	"math"
	"strings"
	"testing"
)

func labels(a axis) string {
	var l []string
	for _, t := range a.ticks {
		l = append(l, t.label)
	}
	return strings.Join(l, " ")
}

func TestNiceStep(t *testing.T) {
	tests := []struct {
		rough float64
		step  float64
		exp   int
	}{
		{1, 1, 0},
		{1.2, 2, 0},
		{2, 2, 0},
		{3.3, 5, 0},
		{5.1, 10, 1},
		{9.99, 10, 1},
		{1000, 1000, 3}, // log10(1000) is a hair below 3 in floating point
		{3333.3, 5000, 3},
		{0.0917, 0.1, -1},
		{0.05, 0.05, -2},
		{0.3, 0.5, -1},
		{1e-3, 1e-3, -3},
		{2.0000000001, 2, 0}, // within the tolerance of 2
	}
	for _, tt := range tests {
		step, exp := niceStep(tt.rough)
		if math.Abs(step-tt.step) > 1e-12*tt.step || exp != tt.exp {
			t.Errorf("niceStep(%g) = %g, %d; want %g, %d", tt.rough, step, exp, tt.step, tt.exp)
		}
	}
}

func TestLinearAxis(t *testing.T) {
	tests := []struct {
		name     string
		lo, hi   float64
		labels   string
		min, max float64
	}{
		{"thousands", 0, 20000, "0 5000 10000 15000 20000", 0, 20000},
		{"tenths without residue", 0, 0.55, "0 0.1 0.2 0.3 0.4 0.5 0.6", 0, 0.6},
		{"sevenths of tenths", 0, 0.7, "0 0.2 0.4 0.6 0.8", 0, 0.8},
		{"hundredths without trailing zeros", 0, 0.3, "0 0.05 0.1 0.15 0.2 0.25 0.3", 0, 0.3},
		{"max on a step", 0, 12, "0 2 4 6 8 10 12", 0, 12},
		{"max above a step", 0, 12.5, "0 5 10 15", 0, 15},
		{"not from zero", 0.05, 5.2, "0 1 2 3 4 5 6", 0, 6},
		{"negative", -3, 7, "-4 -2 0 2 4 6 8", -4, 8},
		{"nothing", 0, 0, "0 0.2 0.4 0.6 0.8 1", 0, 1},
		{"one value", 2, 2, "1 1.5 2 2.5 3", 1, 3},
		{"large", 0, 1.2e6, "0 200000 400000 600000 800000 1000000 1200000", 0, 1.2e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := linearAxis(tt.lo, tt.hi)
			if got := labels(a); got != tt.labels {
				t.Errorf("labels %q, want %q", got, tt.labels)
			}
			if math.Abs(a.min-tt.min) > 1e-9 || math.Abs(a.max-tt.max) > 1e-9 || a.log {
				t.Errorf("axis [%g, %g] log %v, want linear [%g, %g]", a.min, a.max, a.log, tt.min, tt.max)
			}
			if a.min > tt.lo || a.max < tt.hi {
				t.Errorf("axis [%g, %g] does not hold [%g, %g]", a.min, a.max, tt.lo, tt.hi)
			}
			if f := a.frac(a.min); f != 0 {
				t.Errorf("frac(min) = %g", f)
			}
			if f := a.frac(a.max); math.Abs(f-1) > 1e-12 {
				t.Errorf("frac(max) = %g", f)
			}
		})
	}
}

func TestLogAxis(t *testing.T) {
	tests := []struct {
		name     string
		lo, hi   float64
		labels   string
		min, max float64
	}{
		{"decades", 0.5, 20000, "0.1 1 10 100 1000 10000 100000", 0.1, 1e5},
		{"on decades", 1, 1000, "1 10 100 1000", 1, 1000},
		{"within a decade", 2, 5, "1 10", 1, 10},
		{"one value on a decade", 10, 10, "10 100", 10, 100},
		{"small", 0.00012, 0.03, "0.0001 0.001 0.01 0.1", 1e-4, 0.1},
		{"far", 3e-8, 2e7, "1e-8 1e-7 0.000001 0.00001 0.0001 0.001 0.01 0.1 1 10 100 1000 10000 100000 1000000 1e7 1e8", 1e-8, 1e8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := logAxis(tt.lo, tt.hi)
			if got := labels(a); got != tt.labels {
				t.Errorf("labels %q, want %q", got, tt.labels)
			}
			if !a.log || math.Abs(a.min/tt.min-1) > 1e-9 || math.Abs(a.max/tt.max-1) > 1e-9 {
				t.Errorf("axis [%g, %g] log %v, want log [%g, %g]", a.min, a.max, a.log, tt.min, tt.max)
			}
			if decades := len(a.ticks) - 1; len(a.minor) != 8*decades {
				t.Errorf("%d minor marks for %d decades", len(a.minor), decades)
			}
			mid := math.Sqrt(a.min * a.max)
			if f := a.frac(mid); math.Abs(f-0.5) > 1e-9 {
				t.Errorf("frac(%g) = %g, want 0.5", mid, f)
			}
		})
	}
}

func TestDecimal(t *testing.T) {
	tests := []struct {
		v      float64
		places int
		want   string
	}{
		{0.1 + 0.2, 1, "0.3"},
		{3 * 0.2, 1, "0.6"},
		{0.6000000001, 10, "0.6000000001"},
		{0.10, 2, "0.1"},
		{0, 2, "0"},
		{-0.0000001, 2, "0"},
		{5000, 0, "5000"},
		{1.25, 2, "1.25"},
		{-4, 0, "-4"},
	}
	for _, tt := range tests {
		if got := decimal(tt.v, tt.places); got != tt.want {
			t.Errorf("decimal(%v, %d) = %q, want %q", tt.v, tt.places, got, tt.want)
		}
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		vs     []float64
		lo, hi float64
		ok     bool
	}{
		{nil, 0, 0, false},
		{[]float64{0, -1, math.NaN(), math.Inf(1)}, 0, 0, false},
		{[]float64{0, 3, math.NaN(), 0.5, 20, math.Inf(1)}, 0.5, 20, true},
	}
	for _, tt := range tests {
		lo, hi, ok := spread(tt.vs)
		if lo != tt.lo || hi != tt.hi || ok != tt.ok {
			t.Errorf("spread(%v) = %g, %g, %v; want %g, %g, %v", tt.vs, lo, hi, ok, tt.lo, tt.hi, tt.ok)
		}
	}
}
