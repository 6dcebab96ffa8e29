package chart

import (
	"math"
	"strconv"
	"strings"
)

// LogSpread is the ratio of the largest to the smallest positive value
// beyond which a chart's value axis goes logarithmic.
const LogSpread = 100

// linearSteps is the number of steps a linear axis aims at; it gets
// between linearSteps/2.5 and linearSteps of them.
const linearSteps = 6

// tick is a labelled mark on an axis.
type tick struct {
	value float64
	label string
}

// axis maps values in [min, max] onto a fraction of its length, linearly
// or by their logarithm, and carries its ticks.
type axis struct {
	log      bool
	min, max float64 // for a log axis, both > 0
	ticks    []tick
	minor    []float64 // unlabelled marks: 2..9 in each decade of a log axis
}

// frac is where v sits on a: 0 at min, 1 at max.
func (a axis) frac(v float64) float64 {
	if a.log {
		lo := math.Log10(a.min)
		return (math.Log10(v) - lo) / (math.Log10(a.max) - lo)
	}
	return (v - a.min) / (a.max - a.min)
}

// niceStep returns the smallest step not below rough that is 1, 2 or 5
// times a power of ten, and that power. rough must be positive and finite.
func niceStep(rough float64) (step float64, exp int) {
	exp = int(math.Floor(math.Log10(rough)))
	for _, m := range []float64{1, 2, 5} {
		if s := m * math.Pow10(exp); s >= rough*(1-1e-9) {
			return s, exp
		}
	}
	return math.Pow10(exp + 1), exp + 1
}

// linearAxis returns a linear axis from a multiple of a nice step at or
// below lo to one at or above hi, with a labelled tick at each step. A
// span of no width is widened: to [0, 1] around zero, else by half the
// value on either side.
func linearAxis(lo, hi float64) axis {
	if !(hi > lo) {
		if lo == 0 {
			lo, hi = 0, 1
		} else {
			d := math.Abs(lo) / 2
			lo, hi = lo-d, lo+d
		}
	}
	step, exp := niceStep((hi - lo) / linearSteps)
	first := math.Floor(lo/step + 1e-9)
	last := math.Ceil(hi/step - 1e-9)
	a := axis{min: first * step, max: last * step}
	for k := first; k <= last; k++ {
		a.ticks = append(a.ticks, tick{k * step, decimal(k*step, max(0, -exp))})
	}
	return a
}

// logAxis returns a logarithmic axis from the decade at or below lo to
// the one at or above hi (at least one decade), with a labelled tick at
// each decade. lo and hi must be positive.
func logAxis(lo, hi float64) axis {
	first := int(math.Floor(math.Log10(lo) + 1e-9))
	last := int(math.Ceil(math.Log10(hi) - 1e-9))
	if last <= first {
		last = first + 1
	}
	a := axis{log: true, min: math.Pow10(first), max: math.Pow10(last)}
	for k := first; k <= last; k++ {
		a.ticks = append(a.ticks, tick{math.Pow10(k), decade(k)})
		if k < last {
			for m := 2.0; m <= 9; m++ {
				a.minor = append(a.minor, m*math.Pow10(k))
			}
		}
	}
	return a
}

// decimal formats v with at most places decimals and no trailing zeros:
// "0.6", not "0.6000000000000001" nor "0.60"; "5000", not "5000.00".
func decimal(v float64, places int) string {
	s := strconv.FormatFloat(v, 'f', places, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// decade labels 10^k: in full from 0.000001 to 1000000, else as 1e<k>.
func decade(k int) string {
	if k < -6 || k > 6 {
		return "1e" + strconv.Itoa(k)
	}
	return strconv.FormatFloat(math.Pow10(k), 'f', max(0, -k), 64)
}

// valueText formats a value for a tooltip: whole above 1000, else with
// four significant digits.
func valueText(v float64) string {
	if math.Abs(v) >= 1000 {
		return decimal(v, 0)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// usable reports whether v can be drawn: neither NaN nor infinite.
func usable(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// spread returns the smallest and largest positive usable values of vs,
// and whether there is any.
func spread(vs []float64) (lo, hi float64, ok bool) {
	for _, v := range vs {
		if v > 0 && usable(v) {
			if !ok || v < lo {
				lo = v
			}
			if !ok || v > hi {
				hi = v
			}
			ok = true
		}
	}
	return lo, hi, ok
}
