package chart

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Line is one series of a line chart: Y against X, point by point, in
// the order given.
type Line struct {
	// Name is the line's legend entry.
	Name string
	// X and Y hold the points' coordinates, as many of each. A point with
	// a NaN or infinite coordinate is left out, and so is one whose Y is
	// not positive on a logarithmic axis.
	X, Y []float64
	// Color is the line's index in the palette (see Color).
	Color int
	// Dashed draws the line dashed rather than solid.
	Dashed bool
	// Ring draws the points as rings rather than filled circles.
	Ring bool
}

// Lines is a chart of lines against a numeric horizontal axis, with a
// legend above it. A line with no point drawn is left out, legend too.
type Lines struct {
	Title, XLabel, YLabel string
	Lines                 []Line
	// LogY makes the vertical axis logarithmic whatever the spread of the
	// values (if any is positive).
	LogY bool
}

// Layout of a line chart, in pixels.
const (
	linesWidth = 680.0 // the least width of a chart
	linesPlotH = 320.0
)

// xy is a point of a line.
type xy struct{ x, y float64 }

// SVG writes the chart to w as an SVG document. It returns ErrEmpty for a
// chart with no line, and ErrShape for a line with not as many X as Y
// values.
func (c Lines) SVG(w io.Writer) error {
	if len(c.Lines) == 0 {
		return ErrEmpty
	}
	var ys []float64
	for _, l := range c.Lines {
		if len(l.X) != len(l.Y) {
			return fmt.Errorf("%w: line %q has %d X and %d Y values", ErrShape, l.Name, len(l.X), len(l.Y))
		}
		ys = append(ys, l.Y...)
	}
	lo, hi, ok := spread(ys)
	useLog := ok && (c.LogY || hi/lo > LogSpread)

	drawn := make([][]xy, len(c.Lines))
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, l := range c.Lines {
		for k := range l.X {
			x, y := l.X[k], l.Y[k]
			if !usable(x) || !usable(y) || (useLog && y <= 0) {
				continue
			}
			drawn[i] = append(drawn[i], xy{x, y})
			xlo, xhi, ylo, yhi = min(xlo, x), max(xhi, x), min(ylo, y), max(yhi, y)
		}
	}
	xa, ya, yTitle := linearAxis(0, 0), linearAxis(0, 0), c.YLabel
	switch {
	case math.IsInf(xlo, 1): // no point to draw
	case useLog:
		xa, ya, yTitle = linearAxis(xlo, xhi), logAxis(ylo, yhi), yTitle+logNote
	default:
		xa, ya = linearAxis(xlo, xhi), linearAxis(min(0, ylo), yhi)
	}

	var entries []legendEntry
	for i, l := range c.Lines {
		if len(drawn[i]) > 0 {
			entries = append(entries, legendEntry{name: l.Name, color: Color(l.Color), line: true, dashed: l.Dashed, ring: l.Ring})
		}
	}
	width := max(linesWidth, textWidth(c.Title, titleSize)+2*margin)
	left := margin + valueAxisWidth(ya)
	right := margin + textWidth(xa.ticks[len(xa.ticks)-1].label, fontSize)/2
	p := plot{left: left, top: margin + titleH + legendHeight(entries, width), width: width - left - right, height: linesPlotH}
	height := p.bottom() + tickLen + fontSize + 6 + axisTitleH + margin
	px := func(x float64) float64 { return p.left + xa.frac(x)*p.width }

	var cv canvas
	cv.open(width, height)
	cv.title(width, c.Title)
	cv.legend(entries, width, margin+titleH)
	cv.valueAxis(p, ya, yTitle)
	cv.printf(`<g class="x-axis">` + "\n")
	for _, t := range xa.ticks {
		x := px(t.value)
		cv.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x, p.top, x, p.bottom(), grid)
		cv.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x, p.bottom(), x, p.bottom()+tickLen, muted)
		cv.printf(`<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
			x, p.bottom()+tickLen+fontSize+2, esc(t.label))
	}
	cv.printf("</g>\n")
	cv.baseline(p)
	for i, l := range c.Lines {
		if len(drawn[i]) == 0 {
			continue
		}
		color := Color(l.Color)
		var d strings.Builder
		for k, pt := range drawn[i] {
			cmd := "L"
			if k == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f", cmd, px(pt.x), p.y(ya, pt.y))
		}
		cv.printf(`<g class="line"><path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", d.String(), color, dashes(l.Dashed))
		for _, pt := range drawn[i] {
			cv.marker("point", px(pt.x), p.y(ya, pt.y), color, l.Ring, fmt.Sprintf("%s: %s, %s", l.Name, valueText(pt.x), valueText(pt.y)))
		}
		cv.printf("</g>\n")
	}
	cv.axisTitle(p, height-margin-2, c.XLabel)
	cv.close()
	_, err := io.WriteString(w, cv.b.String())
	return err
}
