package chart_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/report/chart"
)

// element is an element of a drawing, with the classes of the groups it
// sits in and its text.
type element struct {
	name, class string
	attr        map[string]string
	within      []string
	text        string
}

func (e element) in(class string) bool {
	for _, c := range e.within {
		if c == class {
			return true
		}
	}
	return false
}

func (e element) num(t *testing.T, attr string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attr[attr], 64)
	if err != nil {
		t.Fatalf("<%s class=%q> %s: %v", e.name, e.class, attr, err)
	}
	return v
}

// drawing is a parsed SVG document.
type drawing struct {
	root     element
	elements []element
}

// count returns the number of elements of class.
func (d drawing) count(class string) int {
	n := 0
	for _, e := range d.elements {
		if e.class == class {
			n++
		}
	}
	return n
}

// texts returns the text of the text elements of class inside a group of
// class group (anywhere for "").
func (d drawing) texts(class, group string) []string {
	var out []string
	for _, e := range d.elements {
		if e.name == "text" && e.class == class && (group == "" || e.in(group)) {
			out = append(out, e.text)
		}
	}
	return out
}

// parse decodes a whole SVG document, failing t if it is not well-formed
// XML with an svg root in the SVG namespace, sized in pixels and with a
// view box of that size.
func parse(t *testing.T, svg []byte) drawing {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var d drawing
	var stack []*element
	var classes []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{name: tok.Name.Local, attr: map[string]string{}, within: append([]string(nil), classes...)}
			for _, a := range tok.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			e.class = e.attr["class"]
			if len(stack) == 0 {
				if tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q", tok.Name.Space)
				}
				d.root = *e
			}
			stack = append(stack, e)
			classes = append(classes, e.class)
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			}
		case xml.EndElement:
			e := stack[len(stack)-1]
			stack, classes = stack[:len(stack)-1], classes[:len(classes)-1]
			if len(stack) > 0 {
				d.elements = append(d.elements, *e)
			}
		}
	}
	if d.root.name != "svg" {
		t.Fatalf("root element %q, want svg", d.root.name)
	}
	w, h := d.root.num(t, "width"), d.root.num(t, "height")
	if want := "0 0 " + d.root.attr["width"] + " " + d.root.attr["height"]; d.root.attr["viewBox"] != want {
		t.Errorf("viewBox %q, want %q", d.root.attr["viewBox"], want)
	}
	if w < 100 || h < 100 {
		t.Errorf("size %gx%g", w, h)
	}
	if d.root.attr["font-family"] != "sans-serif" {
		t.Errorf("font-family %q", d.root.attr["font-family"])
	}
	return d
}

// render draws c and parses the drawing.
func render(t *testing.T, c interface{ SVG(io.Writer) error }) (drawing, string) {
	t.Helper()
	var b bytes.Buffer
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	return parse(t, b.Bytes()), b.String()
}

// inside checks that every rect, circle and unrotated text of d lies in
// its view box, and that the legend is above every bar and point.
func inside(t *testing.T, d drawing) {
	t.Helper()
	w, h := d.root.num(t, "width"), d.root.num(t, "height")
	legendBottom, dataTop := 0.0, math.Inf(1)
	for _, e := range d.elements {
		var x, y, top, bottom float64
		switch {
		case e.name == "rect":
			x, y = e.num(t, "x"), e.num(t, "y")
			top, bottom = y, y+e.num(t, "height")
			if x+e.num(t, "width") > w || bottom > h {
				t.Errorf("rect %v out of %gx%g", e.attr, w, h)
			}
		case e.name == "circle":
			x, y = e.num(t, "cx"), e.num(t, "cy")
			top, bottom = y-e.num(t, "r"), y+e.num(t, "r")
		case e.name == "text" && e.attr["transform"] == "":
			x, y = e.num(t, "x"), e.num(t, "y")
			top, bottom = y-11, y+3 // ascent and descent at 11px
		default:
			continue
		}
		if x < 0 || x > w || y < 0 || y > h {
			t.Errorf("<%s> %q at %g,%g out of %gx%g", e.name, e.text, x, y, w, h)
		}
		switch {
		case e.in("legend"):
			legendBottom = max(legendBottom, bottom)
		case e.class == "bar" || e.class == "point":
			dataTop = min(dataTop, top)
		}
	}
	if legendBottom > dataTop {
		t.Errorf("the legend reaches down to %g, the data up to %g", legendBottom, dataTop)
	}
}

func TestBars(t *testing.T) {
	nan := math.NaN()
	many := make([]string, 12)
	for i := range many {
		many[i] = strconv.Itoa(1+i%3) + "x" + strconv.Itoa(1+i/3) + " coarse"
	}
	tests := []struct {
		name    string
		bars    chart.Bars
		count   int      // bars drawn
		yLabels []string // the value axis
		log     bool
		rotated bool
	}{
		{
			name: "linear",
			bars: chart.Bars{Title: "Bought", XLabel: "scenario", YLabel: "bought / s", Groups: []string{"1x1", "5x1", "5x5"},
				Series: []chart.Series{{Name: "watch", Values: []float64{100, 200, 550}}, {Name: "lua", Values: []float64{0, nan, 400}}}},
			count:   4,
			yLabels: []string{"0", "100", "200", "300", "400", "500", "600"},
		},
		{
			name: "fractions",
			bars: chart.Bars{Title: "Retries", XLabel: "scenario", YLabel: "retries / purchase", Groups: []string{"a", "b"},
				Series: []chart.Series{{Name: "watch", Values: []float64{0.55, 0.3}}}},
			count:   2,
			yLabels: []string{"0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6"},
		},
		{
			name: "spread",
			bars: chart.Bars{Title: "Wait", XLabel: "x", YLabel: "ms", Groups: []string{"a", "b"},
				Series: []chart.Series{{Name: "s", Values: []float64{0, 0.5}}, {Name: "u", Values: []float64{0.5, 20000}}}},
			count:   3,
			yLabels: []string{"0.1", "1", "10", "100", "1000", "10000", "100000"},
			log:     true,
		},
		{
			name: "zeros",
			bars: chart.Bars{Title: "t", XLabel: "x", YLabel: "y", Groups: []string{"a", "b"},
				Series: []chart.Series{{Name: "s", Values: []float64{0, 0}}, {Name: "u", Values: []float64{0, nan}}}},
			count:   0,
			yLabels: []string{"0", "0.2", "0.4", "0.6", "0.8", "1"},
		},
		{
			name: "crowded labels",
			bars: chart.Bars{Title: "Bought per second, ours and the book's", XLabel: "scenario and strategy", YLabel: "bought / s",
				Groups: many, Series: []chart.Series{{Name: "ours", Values: make([]float64, 12)}, {Name: "book", Values: []float64{1: 3, 11: 0}}}},
			count:   1,
			yLabels: []string{"0", "0.5", "1", "1.5", "2", "2.5", "3"},
			rotated: true,
		},
		{
			name: "many series",
			bars: chart.Bars{Title: "t", XLabel: "x", YLabel: "y", Groups: []string{"a"},
				Series: []chart.Series{{Name: "1", Values: []float64{1}}, {Name: "2", Values: []float64{2}}, {Name: "3", Values: []float64{3}},
					{Name: "4", Values: []float64{4}}, {Name: "5", Values: []float64{5}}, {Name: "6", Values: []float64{6}}}},
			count:   6,
			yLabels: []string{"0", "1", "2", "3", "4", "5", "6"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := render(t, tt.bars)
			inside(t, d)
			if got := d.count("bar"); got != tt.count {
				t.Errorf("%d bars, want %d", got, tt.count)
			}
			if got := d.count("legend-entry"); got != len(tt.bars.Series) {
				t.Errorf("%d legend entries, want %d", got, len(tt.bars.Series))
			}
			if got := d.texts("tick", "y-axis"); strings.Join(got, " ") != strings.Join(tt.yLabels, " ") {
				t.Errorf("value axis %q, want %q", got, tt.yLabels)
			}
			groups := d.texts("tick", "x-axis")
			if strings.Join(groups, "|") != strings.Join(tt.bars.Groups, "|") {
				t.Errorf("group labels %q, want %q", groups, tt.bars.Groups)
			}
			titles := d.texts("axis-title", "y-axis")
			if want := tt.bars.YLabel + map[bool]string{true: " (log scale)"}[tt.log]; len(titles) != 1 || titles[0] != want {
				t.Errorf("value axis title %q, want %q", titles, want)
			}
			rotated := 0
			for _, e := range d.elements {
				if e.class == "tick" && e.in("x-axis") && strings.HasPrefix(e.attr["transform"], "rotate(") {
					rotated++
				}
			}
			if want := map[bool]int{true: len(tt.bars.Groups)}[tt.rotated]; rotated != want {
				t.Errorf("%d group labels rotated, want %d", rotated, want)
			}
			if got := d.texts("title", ""); len(got) != 1 || got[0] != tt.bars.Title {
				t.Errorf("title %q", got)
			}
		})
	}
}

// TestBarHeights: bars stand on the axis, in proportion to their values
// on a linear axis, a decade apart per equal step on a log axis.
func TestBarHeights(t *testing.T) {
	heights := func(b chart.Bars) []float64 {
		d, _ := render(t, b)
		var hs []float64
		for _, e := range d.elements {
			if e.class == "bar" {
				hs = append(hs, e.num(t, "height"))
			}
		}
		return hs
	}
	lin := heights(chart.Bars{Title: "t", Groups: []string{"a", "b"}, Series: []chart.Series{{Name: "s", Values: []float64{100, 300}}}})
	if len(lin) != 2 || math.Abs(lin[1]/lin[0]-3) > 0.02 {
		t.Errorf("linear heights %v, want 1:3", lin)
	}
	log := heights(chart.Bars{Title: "t", Groups: []string{"a", "b", "c"}, Series: []chart.Series{{Name: "s", Values: []float64{1, 10, 1000}}}})
	if len(log) != 3 || log[0] <= 0 || math.Abs((log[2]-log[1])-2*(log[1]-log[0])) > 0.2 {
		t.Errorf("log heights %v, want steps of 1 and 2 decades", log)
	}
}

func TestLines(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name    string
		lines   chart.Lines
		drawn   int // lines drawn, and legend entries
		points  int
		rings   int
		dashed  int
		log     bool
		xLabels []string
	}{
		{
			name: "linear",
			lines: chart.Lines{Title: "Bought", XLabel: "round trip, ms", YLabel: "bought / s", Lines: []chart.Line{
				{Name: "watch, lean", X: []float64{0.05, 1.05, 5.2}, Y: []float64{900, 400, 80}},
				{Name: "watch, book", X: []float64{0.05, 1.05, 5.2}, Y: []float64{700, 300, 70}, Color: 1, Dashed: true, Ring: true},
			}},
			drawn: 2, points: 6, rings: 3, dashed: 1,
			xLabels: []string{"0", "1", "2", "3", "4", "5", "6"},
		},
		{
			name: "forced log leaves zeros out",
			lines: chart.Lines{Title: "Retries", XLabel: "round trip, ms", YLabel: "retries / purchase", LogY: true, Lines: []chart.Line{
				{Name: "measured", X: []float64{0, 1, 2}, Y: []float64{0, 0.5, 2}},
				{Name: "model", X: []float64{0, 1, 2}, Y: []float64{0.1, 0.6, 2.5}, Dashed: true, Ring: true},
			}},
			drawn: 2, points: 5, rings: 3, dashed: 1, log: true,
			xLabels: []string{"0", "0.5", "1", "1.5", "2"},
		},
		{
			name: "spread goes log",
			lines: chart.Lines{Title: "t", XLabel: "x", YLabel: "y", Lines: []chart.Line{
				{Name: "a", X: []float64{1, 2}, Y: []float64{0.01, 50}},
			}},
			drawn: 1, points: 2, log: true,
			xLabels: []string{"1", "1.2", "1.4", "1.6", "1.8", "2"},
		},
		{
			name: "a line with nothing to draw is left out",
			lines: chart.Lines{Title: "t", XLabel: "x", YLabel: "y", Lines: []chart.Line{
				{Name: "a", X: []float64{1, 2}, Y: []float64{3, 4}},
				{Name: "b", X: []float64{1, nan}, Y: []float64{nan, 4}},
			}},
			drawn: 1, points: 2,
			xLabels: []string{"1", "1.2", "1.4", "1.6", "1.8", "2"},
		},
		{
			name: "nothing to draw",
			lines: chart.Lines{Title: "t", XLabel: "x", YLabel: "y", Lines: []chart.Line{
				{Name: "a", X: []float64{1}, Y: []float64{nan}},
			}},
			xLabels: []string{"0", "0.2", "0.4", "0.6", "0.8", "1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := render(t, tt.lines)
			inside(t, d)
			rings, dashed := 0, 0
			for _, e := range d.elements {
				if e.class == "point" && e.attr["fill"] == "#ffffff" {
					rings++
				}
				if e.name == "path" && e.in("line") && e.attr["stroke-dasharray"] != "" {
					dashed++
				}
			}
			if d.count("line") != tt.drawn || d.count("legend-entry") != tt.drawn || d.count("point") != tt.points ||
				rings != tt.rings || dashed != tt.dashed {
				t.Errorf("%d lines, %d legend entries, %d points, %d rings, %d dashed; want %d, %d, %d, %d, %d",
					d.count("line"), d.count("legend-entry"), d.count("point"), rings, dashed,
					tt.drawn, tt.drawn, tt.points, tt.rings, tt.dashed)
			}
			if got := d.texts("tick", "x-axis"); strings.Join(got, " ") != strings.Join(tt.xLabels, " ") {
				t.Errorf("horizontal axis %q, want %q", got, tt.xLabels)
			}
			titles := d.texts("axis-title", "y-axis")
			if want := tt.lines.YLabel + map[bool]string{true: " (log scale)"}[tt.log]; len(titles) != 1 || titles[0] != want {
				t.Errorf("value axis title %q, want %q", titles, want)
			}
		})
	}
}

// TestEscaping: names are text, not markup.
func TestEscaping(t *testing.T) {
	name := `<b>"watch" & co</b>`
	d, _ := render(t, chart.Bars{Title: name, XLabel: name, YLabel: name, Groups: []string{name},
		Series: []chart.Series{{Name: name, Values: []float64{1}}}})
	for _, class := range []string{"title", "axis-title", "tick"} {
		found := false
		for _, e := range d.elements {
			found = found || (e.class == class && e.text == name)
		}
		if !found {
			t.Errorf("no %s %q", class, name)
		}
	}
	if got := d.texts("", "legend-entry"); len(got) != 1 || got[0] != name {
		t.Errorf("legend %q", got)
	}
	d, _ = render(t, chart.Lines{Title: name, Lines: []chart.Line{{Name: name, X: []float64{1}, Y: []float64{1}}}})
	if got := d.texts("", "legend-entry"); len(got) != 1 || got[0] != name {
		t.Errorf("legend %q", got)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name  string
		chart interface{ SVG(io.Writer) error }
		want  error
	}{
		{"no group", chart.Bars{Series: []chart.Series{{Name: "s"}}}, chart.ErrEmpty},
		{"no series", chart.Bars{Groups: []string{"a"}}, chart.ErrEmpty},
		{"short series", chart.Bars{Groups: []string{"a", "b"}, Series: []chart.Series{{Name: "s", Values: []float64{1}}}}, chart.ErrShape},
		{"no line", chart.Lines{}, chart.ErrEmpty},
		{"x without y", chart.Lines{Lines: []chart.Line{{Name: "l", X: []float64{1, 2}, Y: []float64{1}}}}, chart.ErrShape},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := tt.chart.SVG(&b); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
		if b.Len() != 0 {
			t.Errorf("%s: wrote %d bytes", tt.name, b.Len())
		}
	}
}

func TestColor(t *testing.T) {
	if chart.Color(0) == chart.Color(1) || chart.Color(0) != chart.Color(10) || chart.Color(-1) != chart.Color(9) {
		t.Errorf("palette: %s %s %s %s %s", chart.Color(0), chart.Color(1), chart.Color(10), chart.Color(-1), chart.Color(9))
	}
}
