package timeline

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SVG geometry, in pixels.
const (
	svgWidth   = 1000
	svgMargin  = 16
	svgTimeW   = 64  // the time column
	svgLine    = 15  // one line of text
	svgRowGap  = 7   // between steps
	svgCharW   = 6.7 // an 11px monospace character
	svgBarW    = 8   // a lease bar
	svgBarGap  = 6   // between the bar and the text
	svgHeaderH = 26
)

// Colours of the drawing.
const (
	colInk      = "#1f2933"
	colMuted    = "#67727e"
	colLine     = "#d5dbe1"
	colLease    = "#2563eb" // a lease that is running
	colNoExpiry = "#7c3aed" // a lock without expiry
	colGone     = "#f59e0b" // a lease that ran out while its holder still acts
	colBad      = "#b91c1c"
	colBadBg    = "#fee2e2"
	colRefused  = "#b45309"
	colRefBg    = "#ffedd5"
	colCommit   = "#15803d"
)

// svgRow is one step as drawn.
type svgRow struct {
	Step
	lane  int
	lines []string
	y, h  float64
}

// svgDrawing is a timeline being drawn: its geometry, its rows, and the
// layers the steps write into (back to front: bg, bars, fg, then foot
// below the lanes).
type svgDrawing struct {
	t        Timeline
	title    string
	lane     map[string]int
	laneW    float64 // one client's column
	textW    float64 // the text beside a lease bar
	headY    float64 // the top of the lane heads
	bottom   float64 // below the last row
	rows     []svgRow
	findings []Step // the checkers' findings, drawn below the lanes

	bg, bars, fg, foot strings.Builder
}

// SVG draws t as swimlanes: one column per client, time going down, a
// step per row. A bar beside a lane shows a lock held (blue while its lease
// runs, violet without expiry, amber once the lease ran out while the
// client still acts), a hatched band a pause (dark after a crash);
// unsafe steps are red and refused commits amber, commits green. The
// checkers' findings and the verdict follow.
func (t Timeline) SVG(w io.Writer) error {
	d := newSVGDrawing(t)
	d.laneHeads()
	d.leasesAndPauses()
	d.steps()
	height := d.footer()
	_, err := io.WriteString(w, d.document(height))
	return err
}

// newSVGDrawing lays t out: the lanes' width, and each step's row with
// its text wrapped to the lane.
func newSVGDrawing(t Timeline) *svgDrawing {
	n := max(len(t.Clients), 1)
	d := &svgDrawing{t: t, title: t.Title, lane: map[string]int{}}
	for i, c := range t.Clients {
		d.lane[c] = i
	}
	d.laneW = float64(svgWidth-2*svgMargin-svgTimeW) / float64(n)
	d.textW = d.laneW - svgBarW - svgBarGap - 8
	if t.Variant != "" {
		d.title += " — " + t.Variant
	}
	d.headY = float64(svgMargin) + 18 + 12
	d.layRows(d.headY + svgHeaderH + svgLine - 2) // the first row's baseline
	return d
}

// layRows places each step of a client in its lane from baseline y down,
// and keeps the findings, which belong to no lane, for the footer.
func (d *svgDrawing) layRows(y float64) {
	chars := int(d.textW / svgCharW)
	for _, s := range d.t.Steps(false) {
		i, ok := d.lane[s.Client]
		if !ok {
			if s.Kind == Finding {
				d.findings = append(d.findings, s)
			}
			continue
		}
		text := s.Text
		if s.Times > 1 {
			text += fmt.Sprintf(" (×%d)", s.Times)
		}
		lines := wrap(text, chars)
		if s.Violation != "" {
			lines = append(lines, wrap("!! "+s.Violation, chars)...)
		}
		h := float64(len(lines))*svgLine + svgRowGap
		d.rows = append(d.rows, svgRow{Step: s, lane: i, lines: lines, y: y, h: h})
		y += h
	}
	d.bottom = y + 4
}

// laneX is the left edge of lane i.
func (d *svgDrawing) laneX(i int) float64 { return svgMargin + svgTimeW + float64(i)*d.laneW }

// laneHeads draws each lane's background and the client's name atop it.
func (d *svgDrawing) laneHeads() {
	for i, c := range d.t.Clients {
		x := d.laneX(i)
		fmt.Fprintf(&d.bg, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s"/>`+"\n",
			x+2, d.headY, d.laneW-4, d.bottom-d.headY, []string{"#f8fafc", "#f1f5f9"}[i%2])
		fmt.Fprintf(&d.fg, `<text x="%.1f" y="%.0f" font-size="13" font-weight="600" fill="%s">%s</text>`+"\n",
			x+svgBarW+svgBarGap+4, d.headY+17, colInk, esc(c))
	}
	fmt.Fprintf(&d.fg, `<text x="%d" y="%.0f" font-size="11" fill="%s">ms</text>`+"\n", svgMargin, d.headY+17, colMuted)
}

// band draws a pause (or, after a crash, a darker band) over lane i.
func (d *svgDrawing) band(i int, from, to float64, crash bool) {
	fill := "url(#pause)"
	if crash {
		fill = "url(#crash)"
	}
	fmt.Fprintf(&d.bg, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n",
		d.laneX(i)+2, from, d.laneW-4, to-from, fill)
}

// bar draws a lock held beside lane i, at least 2 pixels long.
func (d *svgDrawing) bar(i int, from, to float64, col string) {
	if to-from < 2 {
		to = from + 2
	}
	fmt.Fprintf(&d.bars, `<rect x="%.1f" y="%.1f" width="%d" height="%.1f" rx="2" fill="%s"/>`+"\n",
		d.laneX(i)+4, from, svgBarW, to-from, col)
}

// svgPause is a pause or crash still open, from y down.
type svgPause struct {
	y     float64
	crash bool
}

// svgHold is a hold still open, from y down, drawn in col.
type svgHold struct {
	y   float64
	col string
}

// leasesAndPauses draws the hatched bands of pauses and crashes and the
// bars of the holds, each from the row that opens it to the row that
// closes it (or to the bottom).
func (d *svgDrawing) leasesAndPauses() {
	paused := map[int]svgPause{}
	holding := map[int]*svgHold{}
	for _, r := range d.rows {
		top := r.y - svgLine + 3
		switch r.Kind {
		case PauseStart:
			paused[r.lane] = svgPause{y: top}
		case Crash:
			paused[r.lane] = svgPause{y: top, crash: true}
		case PauseEnd:
			if p, ok := paused[r.lane]; ok {
				d.band(r.lane, p.y, top, p.crash)
				delete(paused, r.lane)
			}
		default:
			d.hold(holding, r, top)
		}
	}
	for i, p := range paused {
		d.band(i, p.y, d.bottom, p.crash)
	}
	for i, h := range holding {
		d.bar(i, h.y, d.bottom, h.col)
	}
}

// hold follows row r's effect on its lane's hold: a take opens one (ending
// any open before it), a lease's start or end changes its colour, a
// release closes it, and an operation's result closes a hold whose lease
// ran out.
func (d *svgDrawing) hold(holding map[int]*svgHold, r svgRow, top float64) {
	h := holding[r.lane]
	switch r.Kind {
	case Acquire:
		col := colLease
		if strings.Contains(r.Detail, "no expiry") {
			col = colNoExpiry
		}
		if h != nil {
			d.bar(r.lane, h.y, top, h.col)
		}
		holding[r.lane] = &svgHold{y: top, col: col}
	case LeaseStart:
		if h != nil {
			d.bar(r.lane, h.y, top, h.col)
			holding[r.lane] = &svgHold{y: top, col: colLease}
		}
	case LeaseExpired:
		if h != nil {
			d.bar(r.lane, h.y, top, h.col)
			holding[r.lane] = &svgHold{y: top, col: colGone}
		}
	case Release:
		if h != nil {
			d.bar(r.lane, h.y, r.y+4, h.col)
			delete(holding, r.lane)
		}
	case Result:
		// The operation is over: a lease that ran out is no longer
		// acted on.
		if h != nil && h.col == colGone {
			d.bar(r.lane, h.y, top, h.col)
			delete(holding, r.lane)
		}
	}
}

// steps writes each row: its time, its text, and the mark of an unsafe
// step or a refused commit.
func (d *svgDrawing) steps() {
	for _, r := range d.rows {
		x := d.laneX(r.lane) + svgBarW + svgBarGap + 4
		col, weight := d.mark(r, x)
		fmt.Fprintf(&d.fg, `<text x="%d" y="%.1f" font-size="11" fill="%s">%.1f</text>`+"\n",
			svgMargin, r.y, colMuted, float64(r.At)/float64(time.Millisecond))
		fmt.Fprintf(&d.fg, `<text x="%.1f" y="%.1f" font-size="11" fill="%s"%s>`, x, r.y, col, weight)
		for j, l := range r.lines {
			dy := 0
			if j > 0 {
				dy = svgLine
			}
			fmt.Fprintf(&d.fg, `<tspan x="%.1f" dy="%d">%s</tspan>`, x, dy, esc(l))
		}
		d.fg.WriteString("</text>\n")
	}
}

// mark draws the box and sign of an unsafe step or a refused commit
// whose text starts at x, and returns the colour and weight of r's text.
func (d *svgDrawing) mark(r svgRow, x float64) (col, weight string) {
	box := func(fill, stroke, sign string, signX int) {
		top := r.y - svgLine + 3
		h := float64(len(r.lines))*svgLine + 2
		fmt.Fprintf(&d.bg, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="4" fill="%s" stroke="%s"/>`+"\n",
			x-3, top, d.textW+6, h, fill, stroke)
		fmt.Fprintf(&d.fg, `<text x="%d" y="%.1f" font-size="13" font-weight="700" fill="%s">%s</text>`+"\n",
			signX, r.y, stroke, sign)
	}
	const bold = ` font-weight="600"`
	switch {
	case r.Violation != "":
		box(colBadBg, colBad, "!!", svgMargin+svgTimeW-22)
		return colBad, bold
	case r.Kind == CommitRefused:
		box(colRefBg, colRefused, "✗", svgMargin+svgTimeW-20)
		return colRefused, bold
	case r.Kind == Commit:
		return colCommit, bold
	case r.Kind == PauseStart || r.Kind == PauseEnd || r.Kind == Crash || r.Kind == LeaseExpired:
		return colMuted, ""
	}
	return colInk, ""
}

// footer writes the findings, the verdict and the legend below the lanes,
// and returns the drawing's height.
func (d *svgDrawing) footer() float64 {
	y := d.bottom + 22
	fullW := float64(svgWidth - 2*svgMargin)
	full := int(fullW / svgCharW)
	for _, f := range d.findings {
		col := colMuted
		prefix := "checker: "
		if f.Violation != "" {
			col, prefix = colBad, "!! checker: "
		}
		for _, l := range wrap(prefix+f.Text, full) {
			fmt.Fprintf(&d.foot, `<text x="%d" y="%.0f" font-size="11" fill="%s">%s</text>`+"\n", svgMargin, y, col, esc(l))
			y += svgLine
		}
	}
	if d.t.Verdict != "" {
		y += 6
		for _, l := range wrap(d.t.Verdict, full) {
			fmt.Fprintf(&d.foot, `<text x="%d" y="%.0f" font-size="12" font-weight="600" fill="%s">%s</text>`+"\n",
				svgMargin, y, colInk, esc(l))
			y += svgLine + 2
		}
	}
	y += 8
	d.legend(y)
	return y + svgMargin
}

// legend writes the key to the bars' colours and the bands at baseline y.
func (d *svgDrawing) legend(y float64) {
	legend := []struct{ col, text string }{
		{colLease, "lease running"}, {colNoExpiry, "lock without expiry"}, {colGone, "lease ran out, holder still acting"},
	}
	lx := float64(svgMargin)
	for _, l := range legend {
		fmt.Fprintf(&d.foot, `<rect x="%.0f" y="%.0f" width="%d" height="12" rx="2" fill="%s"/>`, lx, y-10, svgBarW, l.col)
		fmt.Fprintf(&d.foot, `<text x="%.0f" y="%.0f" font-size="11" fill="%s">%s</text>`+"\n", lx+svgBarW+5, y, colMuted, esc(l.text))
		lx += svgBarW + 5 + float64(len(l.text))*svgCharW + 18
	}
	fmt.Fprintf(&d.foot, `<rect x="%.0f" y="%.0f" width="14" height="12" fill="url(#pause)"/>`, lx, y-10)
	fmt.Fprintf(&d.foot, `<text x="%.0f" y="%.0f" font-size="11" fill="%s">paused</text>`+"\n", lx+19, y, colMuted)
	lx += 19 + 6*svgCharW + 18
	fmt.Fprintf(&d.foot, `<rect x="%.0f" y="%.0f" width="14" height="12" fill="url(#crash)"/>`, lx, y-10)
	fmt.Fprintf(&d.foot, `<text x="%.0f" y="%.0f" font-size="11" fill="%s">crashed</text>`+"\n", lx+19, y, colMuted)
}

// document puts the layers together in one SVG document of the height
// given: the title, the patterns of the bands, the layers back to front,
// a rule, and the footer.
func (d *svgDrawing) document(height float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" `+
		`font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace">`+"\n",
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(d.title))
	b.WriteString(`<defs>
<pattern id="pause" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#eef2f7"/><line x1="0" y1="0" x2="0" y2="8" stroke="#d3dbe5" stroke-width="3"/></pattern>
<pattern id="crash" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#e2e8f0"/><line x1="0" y1="0" x2="0" y2="8" stroke="#94a3b8" stroke-width="4"/></pattern>
</defs>
`)
	fmt.Fprintf(&b, `<rect width="%d" height="%.0f" fill="#ffffff"/>`+"\n", svgWidth, height)
	fmt.Fprintf(&b, `<text x="%d" y="%.0f" font-size="16" font-weight="600" fill="%s">%s</text>`+"\n",
		svgMargin, float64(svgMargin)+18, colInk, esc(d.title))
	b.WriteString(d.bg.String())
	b.WriteString(d.bars.String())
	b.WriteString(d.fg.String())
	fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="%s"/>`+"\n",
		svgMargin, d.bottom+6, svgWidth-svgMargin, d.bottom+6, colLine)
	b.WriteString(d.foot.String())
	b.WriteString("</svg>\n")
	return b.String()
}

func esc(s string) string { return html.EscapeString(s) }

// WriteFiles writes t into dir as base.svg and base.txt (its text at
// width columns) and returns the names of the files written.
func (t Timeline) WriteFiles(dir, base string, width int) ([]string, error) {
	var svg, txt bytes.Buffer
	if err := t.SVG(&svg); err != nil {
		return nil, err
	}
	if err := t.Text(&txt, width, false); err != nil {
		return nil, err
	}
	var files []string
	for _, f := range []struct {
		ext  string
		data []byte
	}{{".svg", svg.Bytes()}, {".txt", txt.Bytes()}} {
		if err := os.WriteFile(filepath.Join(dir, base+f.ext), f.data, 0o644); err != nil {
			return files, err
		}
		files = append(files, base+f.ext)
	}
	return files, nil
}
