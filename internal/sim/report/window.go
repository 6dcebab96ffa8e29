package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/lockmarket/lockmarket/internal/report/chart"
	"github.com/lockmarket/lockmarket/internal/report/output"
)

// Chart files written by SweepCharts.
const (
	ChartWindowRetries = "window_retries_per_purchase.svg"
	ChartWindowBought  = "window_bought_per_s.svg"
)

// Sweep is a "simulate window" run: one scenario under each strategy in
// each client form, at each round trip of the sweep.
type Sweep struct {
	// Env is where the sweep ran: its "redis" and "machine" blocks.
	output.Env
	Scenario     string  `json:"scenario"`
	DurationS    float64 `json:"duration_s"`
	Illustrative bool    `json:"illustrative"`
	Seed         uint64  `json:"seed"`
	Pick         int     `json:"pick"`
	Interrupted  bool    `json:"interrupted,omitempty"`
	// LoadStart and LoadEnd are the machine's load when the sweep started
	// and ended (absent where the OS does not report it).
	LoadStart *Load   `json:"load_start,omitempty"`
	LoadEnd   *Load   `json:"load_end,omitempty"`
	Points    []Point `json:"points"`
}

// Point is one cell of a sweep: its row, the client form it ran in and
// the round trip: configured (added by the proxy) and measured (PING p50
// through it, just before the cell).
type Point struct {
	Client          string  `json:"client"`
	RTTConfiguredMs float64 `json:"rtt_configured_ms"`
	RTTMs           float64 `json:"rtt_ms"`
	Row
}

// Violations adds up the violations of every point.
func (s Sweep) Violations() int {
	n := 0
	for _, p := range s.Points {
		n += p.Violations
	}
	return n
}

// RenderSweep writes s to w in format (one of Formats).
func RenderSweep(w io.Writer, format string, s Sweep) error {
	switch format {
	case "table", "markdown":
		return sweepTables(w, s, format == "markdown")
	case "csv":
		return sweepCSV(w, s)
	case "json":
		if s.Points == nil {
			s.Points = []Point{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return fmt.Errorf("report: unknown format %q (want %s)", format, strings.Join(Formats, ", "))
}

// sweepKey is one round trip and client form of a sweep: a line of its
// tables.
type sweepKey struct {
	rtt    float64
	client string
}

// sweepLines groups s's points by round trip and client, in the order
// they ran, and lists the strategies in the order they ran.
func sweepLines(s Sweep) (keys []sweepKey, strategies []string, at map[sweepKey]map[string]Point) {
	at = map[sweepKey]map[string]Point{}
	for _, p := range s.Points {
		k := sweepKey{p.RTTConfiguredMs, p.Client}
		if at[k] == nil {
			keys = append(keys, k)
			at[k] = map[string]Point{}
		}
		at[k][p.Strategy] = p
		if !slices.Contains(strategies, p.Strategy) {
			strategies = append(strategies, p.Strategy)
		}
	}
	return keys, strategies, at
}

// measuredRTT is the round trip measured for a line: the mean of its
// cells' measurements.
func measuredRTT(cells map[string]Point) float64 {
	sum := 0.0
	for _, p := range cells {
		sum += p.RTTMs
	}
	return sum / float64(len(cells))
}

// SweepCaption explains the sweep's tables.
func SweepCaption(s Sweep) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Redis: %s; scenario %s, %gs per cell, seed %d, pick %d. "+
		"rtt: added by the proxy (measured: PING p50 through it, mean over the line's cells). "+
		"w: mean WATCH-to-EXEC window of the purchases' EXECs; λ: writes per second by other clients "+
		"to the keys a purchase WATCHes; P: share of EXECs that committed; e^(−λ·w): the model's P; "+
		"error: model/measured − 1 (the model's retries per purchase, 1/e^(−λ·w) − 1, are in the JSON, "+
		"the CSV and the retries chart).",
		s.Redis, s.Scenario, s.DurationS, s.Seed, s.Pick)
	if lt := LoadText(s.LoadStart, s.LoadEnd, nil); lt != "" {
		b.WriteString(" " + lt)
	}
	if s.Illustrative {
		b.WriteString(" miniredis serves one command at a time inside this process: these figures are illustrative only.")
	}
	if s.Interrupted {
		b.WriteString(" Interrupted: the sweep stopped before its last cell.")
	}
	return b.String()
}

// sweepTables writes the two tables of a sweep (bought per second by
// strategy; WATCH against the model) and the caption, as terminal tables
// or markdown.
func sweepTables(w io.Writer, s Sweep, markdown bool) error {
	keys, strategies, at := sweepLines(s)
	rttText := func(k sweepKey) string {
		set := "0"
		if k.rtt > 0 {
			set = fmtMs(k.rtt, 1)
		}
		return fmt.Sprintf("%s (%s)", set, fmtMs(measuredRTT(at[k]), 1))
	}
	head1 := []string{"rtt\n(measured)", "client"}
	for _, st := range strategies {
		head1 = append(head1, st+"\nbought/s")
	}
	head1 = append(head1, "audit")
	var body1 [][]string
	for _, k := range keys {
		line := []string{rttText(k), k.client}
		audit := "ok"
		for _, st := range strategies {
			p, ok := at[k][st]
			if !ok {
				line = append(line, "-")
				continue
			}
			line = append(line, count(p.BoughtPerS))
			if p.Violations > 0 {
				audit = "FAIL"
			}
		}
		body1 = append(body1, append(line, audit))
	}
	head2 := []string{"rtt\n(measured)", "client", "retries/buy", "w", "λ (/s)", "λ·w", "P", "e^(−λ·w)", "error"}
	var body2 [][]string
	for _, k := range keys {
		p, ok := at[k]["watch"]
		if !ok || p.Conflict == nil {
			continue
		}
		c := p.Conflict
		rpp, errText := "-", "-"
		if p.RetriesPerPurchase != nil {
			rpp = fmtRatio(*p.RetriesPerPurchase)
		}
		if c.ModelError != nil {
			errText = fmt.Sprintf("%+.0f%%", 100**c.ModelError)
		}
		body2 = append(body2, []string{rttText(k), k.client, rpp, fmtMs(c.WindowMs, 1), count(c.WriteRatePerS), fmtRatio(c.Exposure), pct(c.PCommit), pct(c.PCommitModel), errText})
	}
	if markdown {
		var b strings.Builder
		b.WriteString("Items bought per second:\n\n")
		MarkdownTable(&b, head1, figureColumns(len(head1)), body1)
		if len(body2) > 0 {
			b.WriteString("\nWATCH against the model P(commit) = e^(−λ·w):\n\n")
			MarkdownTable(&b, head2, figureColumns(len(head2)), body2)
		}
		b.WriteString("\n" + SweepCaption(s) + "\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	if _, err := fmt.Fprintln(w, "Items bought per second:"); err != nil {
		return err
	}
	if err := TerminalTable(w, head1, figureColumns(len(head1)), body1); err != nil {
		return err
	}
	if len(body2) > 0 {
		if _, err := fmt.Fprintln(w, "WATCH against the model P(commit) = e^(−λ·w):"); err != nil {
			return err
		}
		if err := TerminalTable(w, head2, figureColumns(len(head2)), body2); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, output.Wrap(SweepCaption(s), output.Width))
	return err
}

// SweepCSVHeader is the first line of a sweep's CSV: one line per point.
var SweepCSVHeader = []string{
	"client", "rtt_configured_ms", "rtt_ms", "scenario", "strategy", "listed", "bought", "bought_per_s",
	"retries", "retries_per_purchase", "violations", "window_ms", "write_rate_per_s", "exposure", "execs",
	"p_commit", "p_commit_model", "retries_per_commit_model", "model_error",
}

func sweepCSV(w io.Writer, s Sweep) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(SweepCSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, p := range s.Points {
		rpp := ""
		if p.RetriesPerPurchase != nil {
			rpp = f(*p.RetriesPerPurchase)
		}
		rec := []string{p.Client, f(p.RTTConfiguredMs), f(p.RTTMs), p.Scenario, p.Strategy, i(p.Listed), i(p.Bought),
			f(p.BoughtPerS), i(p.Retries), rpp, strconv.Itoa(p.Violations)}
		if c := p.Conflict; c != nil {
			e := ""
			if c.ModelError != nil {
				e = f(*c.ModelError)
			}
			rec = append(rec, f(c.WindowMs), f(c.WriteRatePerS), f(c.Exposure), i(c.Execs), f(c.PCommit),
				f(c.PCommitModel), f(c.RetriesPerCommitModel), e)
		} else {
			rec = append(rec, "", "", "", "", "", "", "", "")
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// SweepCharts writes the sweep's charts into dir and returns their file
// names: WATCH retries per purchase against the measured round trip, each
// client form measured and as the model predicts; and items bought per
// second of every strategy and client form against it.
func SweepCharts(dir string, s Sweep) ([]string, error) {
	if len(s.Points) == 0 {
		return nil, errors.New("report: no points to chart")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	keys, strategies, at := sweepLines(s)
	var clients []string
	for _, k := range keys {
		if !slices.Contains(clients, k.client) {
			clients = append(clients, k.client)
		}
	}
	sub := fmt.Sprintf(" (%s, %s, %gs per cell)", s.Scenario, s.Redis.Mode, s.DurationS)
	if s.Illustrative {
		sub = " (miniredis: illustrative only)"
	}
	const xLabel = "round trip, ms (measured: PING p50 through the proxy)"
	var retries, bought []chart.Line
	for ci, client := range clients {
		meas := chart.Line{Name: "watch, " + client + ": measured", Color: ci}
		model := chart.Line{Name: "watch, " + client + ": model e^(λw) − 1", Color: ci, Dashed: true, Ring: true}
		for _, k := range keys {
			if k.client != client {
				continue
			}
			if p, ok := at[k]["watch"]; ok && p.Conflict != nil && p.RetriesPerPurchase != nil {
				x := measuredRTT(at[k])
				meas.X, meas.Y = append(meas.X, x), append(meas.Y, *p.RetriesPerPurchase)
				model.X, model.Y = append(model.X, x), append(model.Y, p.Conflict.RetriesPerCommitModel)
			}
		}
		if len(meas.X) > 0 {
			retries = append(retries, meas, model)
		}
		for si, st := range strategies {
			l := chart.Line{Name: st + ", " + client, Color: si, Dashed: ci > 0, Ring: ci > 0}
			for _, k := range keys {
				if p, ok := at[k][st]; ok && k.client == client {
					l.X, l.Y = append(l.X, measuredRTT(at[k])), append(l.Y, p.BoughtPerS)
				}
			}
			bought = append(bought, l)
		}
	}
	var charts []namedChart
	if len(retries) > 0 {
		charts = append(charts, namedChart{ChartWindowRetries, chart.Lines{Title: "WATCH retries per item bought" + sub,
			XLabel: xLabel, YLabel: "retries / purchase", Lines: retries, LogY: true}})
	}
	if len(bought) > 0 {
		charts = append(charts, namedChart{ChartWindowBought, chart.Lines{Title: "Items bought per second" + sub,
			XLabel: xLabel, YLabel: "bought / s", Lines: bought, LogY: true}})
	}
	return writeCharts(dir, charts)
}

// WriteSweep writes window.md, window.csv, window.json and the charts of
// s into dir, and returns the names of the files written.
func WriteSweep(dir string, s Sweep) ([]string, error) {
	files, err := writeDocuments(dir, "window", func(w io.Writer, format string) error {
		return RenderSweep(w, format, s)
	})
	if err != nil {
		return files, err
	}
	charts, err := SweepCharts(dir, s)
	return append(files, charts...), err
}
