// Package chart draws small SVG charts: grouped bars (Bars) and lines
// against a numeric axis (Lines). The drawings are plain SVG 1.1 in a
// generic sans-serif font, so that they embed no font and any browser
// reads them.
//
// A value axis starts at zero and is divided in nice steps (1, 2 or 5
// times a power of ten), unless its positive values spread over more than
// LogSpread: it is then logarithmic, with a tick at each decade.
package chart

import (
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Errors returned by the renderers.
var (
	// ErrEmpty: a chart with nothing to draw (no group, series or line).
	ErrEmpty = errors.New("chart: nothing to draw")
	// ErrShape: a series whose length does not match its chart's groups,
	// or a line with not as many X as Y values.
	ErrShape = errors.New("chart: values do not match")
)

// palette holds the colours of series and lines, in order.
var palette = []string{
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
}

// Color returns the i-th colour of the palette (modulo its length), as
// "#rrggbb".
func Color(i int) string {
	return palette[((i%len(palette))+len(palette))%len(palette)]
}

// Layout, in pixels.
const (
	margin     = 12.0
	fontSize   = 11.0 // ticks, labels, legend
	titleSize  = 14.0
	charWidth  = 0.6 // of the font size: a generous average for sans-serif
	titleH     = 24.0
	legendRowH = 18.0
	tickLen    = 5.0
	axisTitleH = 18.0 // room for an axis title beside or below its labels
	ink        = "#1f2933"
	muted      = "#52606d"
	grid       = "#e4e7eb"
)

// textWidth estimates the width of s drawn at size.
func textWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * charWidth
}

// esc escapes s for the text or an attribute of an XML document.
func esc(s string) string {
	var b strings.Builder
	if err := xml.EscapeText(&b, []byte(s)); err != nil {
		return "" // a strings.Builder does not fail
	}
	return b.String()
}

// canvas accumulates the elements of an SVG document.
type canvas struct {
	b strings.Builder
}

func (c *canvas) printf(format string, args ...any) {
	fmt.Fprintf(&c.b, format, args...)
}

// open writes the document's head: its size and a white background.
func (c *canvas) open(width, height float64) {
	c.printf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" `+
		`font-family="sans-serif" font-size="%g" fill="%s">`+"\n", width, height, width, height, fontSize, ink)
	c.printf(`<rect class="background" x="0" y="0" width="%.0f" height="%.0f" fill="#ffffff"/>`+"\n", width, height)
}

// close ends the document.
func (c *canvas) close() { c.b.WriteString("</svg>\n") }

// title writes the chart's title, centred at the top.
func (c *canvas) title(width float64, s string) {
	c.printf(`<text class="title" x="%.1f" y="%.1f" text-anchor="middle" font-size="%g" font-weight="bold">%s</text>`+"\n",
		width/2, margin+titleSize, titleSize, esc(s))
}

// legendEntry is one entry of a legend: a swatch (bars) or a stretch of
// line with its marker.
type legendEntry struct {
	name   string
	color  string
	line   bool // a line sample rather than a swatch
	dashed bool
	ring   bool
}

// Widths of an entry's line sample or swatch, of the gap between it and
// its name, and of the gap between two entries.
const (
	legendSample = 24.0
	legendSwatch = 10.0
	legendGap    = 6.0
	legendSpace  = 18.0
)

// sample is the width of the entry's line sample or swatch.
func (e legendEntry) sample() float64 {
	if e.line {
		return legendSample
	}
	return legendSwatch
}

func (e legendEntry) width() float64 {
	return e.sample() + legendGap + textWidth(e.name, fontSize) + legendSpace
}

// legendRows lays entries out in rows that fit between the margins of a
// chart width wide, and returns the first entry of each row.
func legendRows(entries []legendEntry, width float64) []int {
	var starts []int
	x := 0.0
	for i, e := range entries {
		if i == 0 || x+e.width() > width-2*margin {
			starts = append(starts, i)
			x = 0
		}
		x += e.width()
	}
	return starts
}

// legend writes the entries in rows from y (the top of the first row),
// each row centred.
func (c *canvas) legend(entries []legendEntry, width, y float64) {
	starts := legendRows(entries, width)
	c.printf(`<g class="legend">` + "\n")
	for r, from := range starts {
		to := len(entries)
		if r+1 < len(starts) {
			to = starts[r+1]
		}
		rowW := -legendSpace
		for _, e := range entries[from:to] {
			rowW += e.width()
		}
		x := (width - rowW) / 2
		mid := y + float64(r)*legendRowH + legendRowH/2
		for _, e := range entries[from:to] {
			c.printf(`<g class="legend-entry">`)
			if e.line {
				c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`,
					x, mid, x+legendSample, mid, e.color, dashes(e.dashed))
				c.marker("marker", x+legendSample/2, mid, e.color, e.ring, "")
			} else {
				c.printf(`<rect x="%.1f" y="%.1f" width="%g" height="%g" fill="%s"/>`,
					x, mid-legendSwatch/2, legendSwatch, legendSwatch, e.color)
			}
			c.printf(`<text x="%.1f" y="%.1f">%s</text></g>`+"\n", x+e.sample()+legendGap, mid+4, esc(e.name))
			x += e.width()
		}
	}
	c.printf("</g>\n")
}

// legendHeight is the height the legend of entries takes in a chart width
// wide.
func legendHeight(entries []legendEntry, width float64) float64 {
	if len(entries) == 0 {
		return 0
	}
	return float64(len(legendRows(entries, width)))*legendRowH + 8
}

// dashes is the attribute of a dashed stroke, or nothing.
func dashes(dashed bool) string {
	if dashed {
		return ` stroke-dasharray="6 4"`
	}
	return ""
}

// marker draws a point of class class (a point of the data, or the
// marker of a legend entry): a filled circle, or a ring. tip, if any, is
// its tooltip.
func (c *canvas) marker(class string, x, y float64, color string, ring bool, tip string) {
	paint := fmt.Sprintf(`fill="%s"`, color)
	if ring {
		paint = fmt.Sprintf(`fill="#ffffff" stroke="%s" stroke-width="1.5"`, color)
	}
	c.printf(`<circle class="%s" cx="%.1f" cy="%.1f" r="3.5" %s`, class, x, y, paint)
	if tip == "" {
		c.printf("/>")
		return
	}
	c.printf("><title>%s</title></circle>", esc(tip))
}

// plot is the area the data is drawn in, in pixels.
type plot struct {
	left, top, width, height float64
}

func (p plot) right() float64  { return p.left + p.width }
func (p plot) bottom() float64 { return p.top + p.height }

// y is the vertical position of v on the value axis a.
func (p plot) y(a axis, v float64) float64 { return p.bottom() - a.frac(v)*p.height }

// tickLabelWidth is the width of the widest label of a.
func tickLabelWidth(a axis) float64 {
	w := 0.0
	for _, t := range a.ticks {
		w = max(w, textWidth(t.label, fontSize))
	}
	return w
}

// valueAxisWidth is the room left of the plot for the value axis: its
// title (rotated), tick labels and ticks.
func valueAxisWidth(a axis) float64 {
	return axisTitleH + tickLabelWidth(a) + tickLen + 4
}

// valueAxis draws the vertical axis a on the left of p: grid lines across
// p at each labelled tick, minor marks, labels and the title, rotated.
func (c *canvas) valueAxis(p plot, a axis, title string) {
	c.printf(`<g class="y-axis">` + "\n")
	for _, v := range a.minor {
		y := p.y(a, v)
		c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", p.left-tickLen/2, y, p.left, y, muted)
	}
	for _, t := range a.ticks {
		y := p.y(a, t.value)
		c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, p.left, y, p.right(), y, grid)
		c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, p.left-tickLen, y, p.left, y, muted)
		c.printf(`<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", p.left-tickLen-3, y+4, esc(t.label))
	}
	x := margin + fontSize
	c.printf(`<text class="axis-title" x="%.1f" y="%.1f" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
		x, p.top+p.height/2, x, p.top+p.height/2, esc(title))
	c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", p.left, p.top, p.left, p.bottom(), muted)
	c.printf("</g>\n")
}

// baseline draws the horizontal axis line under p.
func (c *canvas) baseline(p plot) {
	c.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", p.left, p.bottom(), p.right(), p.bottom(), muted)
}

// axisTitle writes the title of the horizontal axis, centred under p at
// baseline y.
func (c *canvas) axisTitle(p plot, y float64, title string) {
	c.printf(`<text class="axis-title" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", p.left+p.width/2, y, esc(title))
}

// logNote is added to the title of a logarithmic axis.
const logNote = " (log scale)"

// degrees to radians.
func radians(deg float64) float64 { return deg * math.Pi / 180 }
