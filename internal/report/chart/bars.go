package chart

import (
	"fmt"
	"io"
	"math"
)

// Series is one set of bars of a grouped bar chart.
type Series struct {
	// Name is the series' legend entry.
	Name string
	// Values holds one value per group of the chart. A value that is not
	// positive, or NaN, or infinite, is drawn as no bar.
	Values []float64
}

// Bars is a grouped bar chart: a group per label along the horizontal
// axis and in each group a bar per series, each series in its own colour
// (see Color) and named in the legend above the chart. Labels too wide
// for their group are rotated.
type Bars struct {
	Title, XLabel, YLabel string
	// Groups are the labels of the groups, left to right.
	Groups []string
	Series []Series
}

// Layout of a bar chart, in pixels.
const (
	barsPlotH   = 280.0
	barsWidth   = 640.0 // the least width of a chart
	barWidth    = 16.0  // with up to maxWideBars series; narrower beyond
	maxBarWidth = 32.0  // bars widen to this in roomy groups
	groupGap    = 28.0  // between the bars of two groups, at the least
	labelAngle  = 40.0  // degrees a rotated group label turns by
)

// maxWideBars is the number of series up to which bars are barWidth
// wide; beyond, a group is as wide as maxWideBars such bars.
const maxWideBars = 4

// SVG writes the chart to w as an SVG document. It returns ErrEmpty for a
// chart with no group or no series, and ErrShape for a series without a
// value per group.
func (c Bars) SVG(w io.Writer) error {
	if len(c.Groups) == 0 || len(c.Series) == 0 {
		return ErrEmpty
	}
	var all []float64
	for _, s := range c.Series {
		if len(s.Values) != len(c.Groups) {
			return fmt.Errorf("%w: series %q has %d values for %d groups", ErrShape, s.Name, len(s.Values), len(c.Groups))
		}
		all = append(all, s.Values...)
	}
	lo, hi, ok := spread(all)
	y, yTitle := linearAxis(0, hi), c.YLabel
	if ok && hi/lo > LogSpread {
		// The axis starts at least a third below the smallest value, so
		// that the smallest bar shows.
		y, yTitle = logAxis(lo/1.5, hi), yTitle+logNote
	}

	n := len(c.Series)
	barW := barWidth
	if n > maxWideBars {
		barW = barWidth * maxWideBars / float64(n)
	}
	groups := float64(len(c.Groups))
	left, right := margin+valueAxisWidth(y), margin+4
	width := max(barsWidth, left+groups*(float64(n)*barW+groupGap)+right, textWidth(c.Title, titleSize)+2*margin)
	groupW := (width - left - right) / groups
	// Bars widen to fill a roomy group, up to maxBarWidth.
	barW = max(barW, min(maxBarWidth, (groupW-groupGap)/float64(n)))
	labelW := 0.0
	for _, l := range c.Groups {
		labelW = max(labelW, textWidth(l, fontSize))
	}
	rotate := labelW > groupW-8
	labelsH := fontSize + 6
	if rotate {
		a := radians(labelAngle)
		labelsH = labelW*math.Sin(a) + fontSize*math.Cos(a) + 8
		// The first label reaches left of its group: widen the margin.
		if need := margin + labelW*math.Cos(a) - groupW/2; need > left {
			width += need - left
			left = need
		}
	}
	entries := make([]legendEntry, n)
	for i, s := range c.Series {
		entries[i] = legendEntry{name: s.Name, color: Color(i)}
	}
	p := plot{left: left, top: margin + titleH + legendHeight(entries, width), width: width - left - right, height: barsPlotH}
	height := p.bottom() + tickLen + labelsH + axisTitleH + margin

	var cv canvas
	cv.open(width, height)
	cv.title(width, c.Title)
	cv.legend(entries, width, margin+titleH)
	cv.valueAxis(p, y, yTitle)
	for i, s := range c.Series {
		cv.printf(`<g class="series" fill="%s">`+"\n", Color(i))
		for j, v := range s.Values {
			if !(v > 0) || !usable(v) {
				continue
			}
			x := p.left + (float64(j)+0.5)*groupW + (float64(i)-float64(n)/2)*barW
			top := p.y(y, v)
			cv.printf(`<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s, %s: %s</title></rect>`+"\n",
				x, top, barW, p.bottom()-top, esc(c.Groups[j]), esc(s.Name), valueText(v))
		}
		cv.printf("</g>\n")
	}
	cv.baseline(p)
	cv.printf(`<g class="x-axis">` + "\n")
	for j, l := range c.Groups {
		x := p.left + (float64(j)+0.5)*groupW
		cv.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x, p.bottom(), x, p.bottom()+tickLen, muted)
		if rotate {
			ly := p.bottom() + tickLen + 8
			cv.printf(`<text class="tick" x="%.1f" y="%.1f" text-anchor="end" transform="rotate(-%g %.1f %.1f)">%s</text>`+"\n",
				x, ly, labelAngle, x, ly, esc(l))
		} else {
			cv.printf(`<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
				x, p.bottom()+tickLen+fontSize+2, esc(l))
		}
	}
	cv.printf("</g>\n")
	cv.axisTitle(p, height-margin-2, c.XLabel)
	cv.close()
	_, err := io.WriteString(w, cv.b.String())
	return err
}
