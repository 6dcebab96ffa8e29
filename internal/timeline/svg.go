package timeline

import (
	"fmt"
	"html"
	"io"
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

// SVG draws t as swimlanes: one column per client, time going down, a
// step per row. A bar beside a lane shows a lock held (blue while its lease
// runs, violet without expiry, amber once the lease ran out while the
// client still acts), a hatched band a pause (dark after a crash);
// unsafe steps are red and refused commits amber, commits green. The
// checkers' findings and the verdict follow.
func (t Timeline) SVG(w io.Writer) error {
	n := max(len(t.Clients), 1)
	lane := map[string]int{}
	for i, c := range t.Clients {
		lane[c] = i
	}
	laneW := float64(svgWidth-2*svgMargin-svgTimeW) / float64(n)
	textW := laneW - svgBarW - svgBarGap - 8
	chars := int(textW / svgCharW)

	var b strings.Builder
	y := float64(svgMargin)
	title := t.Title
	if t.Variant != "" {
		title += " — " + t.Variant
	}
	y += 18
	header := fmt.Sprintf(`<text x="%d" y="%.0f" font-size="16" font-weight="600" fill="%s">%s</text>`+"\n",
		svgMargin, y, colInk, esc(title))
	y += 12

	// Lane heads.
	laneX := func(i int) float64 { return svgMargin + svgTimeW + float64(i)*laneW }
	headY := y
	y += svgHeaderH + svgLine - 2 // the first row's baseline

	// Rows.
	var rows []svgRow
	var findings []Step
	for _, s := range t.Steps(false) {
		i, ok := lane[s.Client]
		if !ok {
			if s.Kind == Finding {
				findings = append(findings, s)
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
		rows = append(rows, svgRow{Step: s, lane: i, lines: lines, y: y, h: h})
		y += h
	}
	bottom := y + 4

	var bg, bars, fg strings.Builder
	// Lane separators and heads.
	for i, c := range t.Clients {
		x := laneX(i)
		fmt.Fprintf(&bg, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s"/>`+"\n",
			x+2, headY, laneW-4, bottom-headY, []string{"#f8fafc", "#f1f5f9"}[i%2])
		fmt.Fprintf(&fg, `<text x="%.1f" y="%.0f" font-size="13" font-weight="600" fill="%s">%s</text>`+"\n",
			x+svgBarW+svgBarGap+4, headY+17, colInk, esc(c))
	}
	fmt.Fprintf(&fg, `<text x="%d" y="%.0f" font-size="11" fill="%s">ms</text>`+"\n", svgMargin, headY+17, colMuted)

	// Pauses and crashes: hatched bands.
	type open struct {
		y     float64
		crash bool
	}
	paused := map[int]open{}
	band := func(i int, from, to float64, crash bool) {
		fill := "url(#pause)"
		if crash {
			fill = "url(#crash)"
		}
		fmt.Fprintf(&bg, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n",
			laneX(i)+2, from, laneW-4, to-from, fill)
	}
	// Leases: bars beside the lane.
	type held struct {
		y      float64
		col    string
		expiry bool
	}
	holding := map[int]*held{}
	bar := func(i int, from, to float64, col string) {
		if to-from < 2 {
			to = from + 2
		}
		fmt.Fprintf(&bars, `<rect x="%.1f" y="%.1f" width="%d" height="%.1f" rx="2" fill="%s"/>`+"\n",
			laneX(i)+4, from, svgBarW, to-from, col)
	}
	for _, r := range rows {
		top := r.y - svgLine + 3
		switch r.Kind {
		case PauseStart:
			paused[r.lane] = open{y: top}
		case Crash:
			paused[r.lane] = open{y: top, crash: true}
		case PauseEnd:
			if p, ok := paused[r.lane]; ok {
				band(r.lane, p.y, top, p.crash)
				delete(paused, r.lane)
			}
		case Acquire:
			col := colLease
			if strings.Contains(r.Detail, "no expiry") {
				col = colNoExpiry
			}
			if h := holding[r.lane]; h != nil {
				bar(r.lane, h.y, top, h.col)
			}
			holding[r.lane] = &held{y: top, col: col, expiry: col == colLease}
		case LeaseStart:
			if h := holding[r.lane]; h != nil {
				bar(r.lane, h.y, top, h.col)
				holding[r.lane] = &held{y: top, col: colLease, expiry: true}
			}
		case LeaseExpired:
			if h := holding[r.lane]; h != nil {
				bar(r.lane, h.y, top, h.col)
				holding[r.lane] = &held{y: top, col: colGone}
			}
		case Release:
			if h := holding[r.lane]; h != nil {
				bar(r.lane, h.y, r.y+4, h.col)
				delete(holding, r.lane)
			}
		case Result:
			// The operation is over: a lease that ran out is no longer
			// acted on.
			if h := holding[r.lane]; h != nil && h.col == colGone {
				bar(r.lane, h.y, top, h.col)
				delete(holding, r.lane)
			}
		}
	}
	for i, p := range paused {
		band(i, p.y, bottom, p.crash)
	}
	for i, h := range holding {
		bar(i, h.y, bottom, h.col)
	}

	// Steps.
	for _, r := range rows {
		x := laneX(r.lane) + svgBarW + svgBarGap + 4
		top := r.y - svgLine + 3
		h := float64(len(r.lines))*svgLine + 2
		col := colInk
		weight := ""
		switch {
		case r.Violation != "":
			fmt.Fprintf(&bg, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="4" fill="%s" stroke="%s"/>`+"\n",
				x-3, top, textW+6, h, colBadBg, colBad)
			fmt.Fprintf(&fg, `<text x="%d" y="%.1f" font-size="13" font-weight="700" fill="%s">!!</text>`+"\n",
				svgMargin+svgTimeW-22, r.y, colBad)
			col, weight = colBad, ` font-weight="600"`
		case r.Kind == CommitRefused:
			fmt.Fprintf(&bg, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="4" fill="%s" stroke="%s"/>`+"\n",
				x-3, top, textW+6, h, colRefBg, colRefused)
			fmt.Fprintf(&fg, `<text x="%d" y="%.1f" font-size="13" font-weight="700" fill="%s">✗</text>`+"\n",
				svgMargin+svgTimeW-20, r.y, colRefused)
			col, weight = colRefused, ` font-weight="600"`
		case r.Kind == Commit:
			col, weight = colCommit, ` font-weight="600"`
		case r.Kind == PauseStart || r.Kind == PauseEnd || r.Kind == Crash || r.Kind == LeaseExpired:
			col = colMuted
		}
		fmt.Fprintf(&fg, `<text x="%d" y="%.1f" font-size="11" fill="%s">%.1f</text>`+"\n",
			svgMargin, r.y, colMuted, float64(r.At)/float64(time.Millisecond))
		fmt.Fprintf(&fg, `<text x="%.1f" y="%.1f" font-size="11" fill="%s"%s>`, x, r.y, col, weight)
		for j, l := range r.lines {
			dy := 0
			if j > 0 {
				dy = svgLine
			}
			fmt.Fprintf(&fg, `<tspan x="%.1f" dy="%d">%s</tspan>`, x, dy, esc(l))
		}
		fg.WriteString("</text>\n")
	}

	// Findings and verdict.
	y = bottom + 22
	var foot strings.Builder
	fullW := float64(svgWidth - 2*svgMargin)
	full := int(fullW / svgCharW)
	for _, f := range findings {
		col := colMuted
		prefix := "checker: "
		if f.Violation != "" {
			col, prefix = colBad, "!! checker: "
		}
		for _, l := range wrap(prefix+f.Text, full) {
			fmt.Fprintf(&foot, `<text x="%d" y="%.0f" font-size="11" fill="%s">%s</text>`+"\n", svgMargin, y, col, esc(l))
			y += svgLine
		}
	}
	if t.Verdict != "" {
		y += 6
		for _, l := range wrap(t.Verdict, full) {
			fmt.Fprintf(&foot, `<text x="%d" y="%.0f" font-size="12" font-weight="600" fill="%s">%s</text>`+"\n",
				svgMargin, y, colInk, esc(l))
			y += svgLine + 2
		}
	}
	y += 8
	legendY := y
	legend := []struct{ col, text string }{
		{colLease, "lease running"}, {colNoExpiry, "lock without expiry"}, {colGone, "lease ran out, holder still acting"},
	}
	lx := float64(svgMargin)
	for _, l := range legend {
		fmt.Fprintf(&foot, `<rect x="%.0f" y="%.0f" width="%d" height="12" rx="2" fill="%s"/>`, lx, legendY-10, svgBarW, l.col)
		fmt.Fprintf(&foot, `<text x="%.0f" y="%.0f" font-size="11" fill="%s">%s</text>`+"\n", lx+svgBarW+5, legendY, colMuted, esc(l.text))
		lx += svgBarW + 5 + float64(len(l.text))*svgCharW + 18
	}
	fmt.Fprintf(&foot, `<rect x="%.0f" y="%.0f" width="14" height="12" fill="url(#pause)"/>`, lx, legendY-10)
	fmt.Fprintf(&foot, `<text x="%.0f" y="%.0f" font-size="11" fill="%s">paused</text>`+"\n", lx+19, legendY, colMuted)
	lx += 19 + 6*svgCharW + 18
	fmt.Fprintf(&foot, `<rect x="%.0f" y="%.0f" width="14" height="12" fill="url(#crash)"/>`, lx, legendY-10)
	fmt.Fprintf(&foot, `<text x="%.0f" y="%.0f" font-size="11" fill="%s">crashed</text>`+"\n", lx+19, legendY, colMuted)
	height := legendY + svgMargin

	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" `+
		`font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace">`+"\n",
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(title))
	b.WriteString(`<defs>
<pattern id="pause" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#eef2f7"/><line x1="0" y1="0" x2="0" y2="8" stroke="#d3dbe5" stroke-width="3"/></pattern>
<pattern id="crash" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#e2e8f0"/><line x1="0" y1="0" x2="0" y2="8" stroke="#94a3b8" stroke-width="4"/></pattern>
</defs>
`)
	fmt.Fprintf(&b, `<rect width="%d" height="%.0f" fill="#ffffff"/>`+"\n", svgWidth, height)
	b.WriteString(header)
	b.WriteString(bg.String())
	b.WriteString(bars.String())
	b.WriteString(fg.String())
	fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="%s"/>`+"\n",
		svgMargin, bottom+6, svgWidth-svgMargin, bottom+6, colLine)
	b.WriteString(foot.String())
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string { return html.EscapeString(s) }
