package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockmarket/lockmarket/internal/report/chart"
)

// Chart files written by Charts, in order.
const (
	ChartBought       = "bought_per_s.svg"
	ChartRetries      = "retries_per_purchase.svg"
	ChartMeanWait     = "wait_mean_ms.svg"
	ChartP99Wait      = "wait_p99_ms.svg"
	ChartBookBought   = "book_vs_ours_bought.svg"
	ChartBookMeanWait = "book_vs_ours_wait.svg"
)

// namedChart is a chart and the name of the file it is written to.
type namedChart struct {
	name string
	svg  interface{ SVG(io.Writer) error }
}

// writeCharts writes each chart into its file in dir and returns the
// names of the files written.
func writeCharts(dir string, charts []namedChart) ([]string, error) {
	var files []string
	for _, c := range charts {
		var b bytes.Buffer
		err := c.svg.SVG(&b)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, c.name), b.Bytes(), 0o644)
		}
		if err != nil {
			return files, fmt.Errorf("chart %s: %w", c.name, err)
		}
		files = append(files, c.name)
	}
	return files, nil
}

// writeDocuments writes base.md, base.csv and base.json into dir, each
// rendered in its format (markdown, csv, json) by render, and returns the
// names of the files written.
func writeDocuments(dir, base string, render func(w io.Writer, format string) error) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, f := range []struct{ name, format string }{
		{base + ".md", "markdown"}, {base + ".csv", "csv"}, {base + ".json", "json"},
	} {
		out, err := os.Create(filepath.Join(dir, f.name))
		if err != nil {
			return files, err
		}
		err = render(out, f.format)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return files, fmt.Errorf("%s: %w", f.name, err)
		}
		files = append(files, f.name)
	}
	return files, nil
}

// Charts writes the SVG charts of doc into dir and returns the file names
// it wrote: bought per second, retries per purchase, mean and p99 wait per
// scenario and strategy, and, when the run has cells the book published,
// ours beside the book's for bought per second and mean wait.
func Charts(dir string, doc Document) ([]string, error) {
	if len(doc.Rows) == 0 {
		return nil, errors.New("report: no rows to chart")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var scenarios, strategies []string
	for _, r := range doc.Rows {
		if !slices.Contains(scenarios, r.Label()) {
			scenarios = append(scenarios, r.Label())
		}
		if !slices.Contains(strategies, r.Strategy) {
			strategies = append(strategies, r.Strategy)
		}
	}
	byStrategy := func(metric func(Row) float64) []chart.Series {
		out := make([]chart.Series, len(strategies))
		for i, st := range strategies {
			out[i] = chart.Series{Name: st, Values: make([]float64, len(scenarios))}
			for j := range scenarios {
				out[i].Values[j] = math.NaN()
			}
		}
		for _, r := range doc.Rows {
			i, j := slices.Index(strategies, r.Strategy), slices.Index(scenarios, r.Label())
			out[i].Values[j] = metric(r)
		}
		return out
	}
	const byScenario = "scenario (listers x buyers)"
	sub := fmt.Sprintf(" (%s, %gs per cell)", doc.Redis.Mode, doc.DurationS)
	if doc.Illustrative {
		sub = " (miniredis: illustrative only)"
	}
	perScenario := func(name, title, yLabel string, metric func(Row) float64) namedChart {
		return namedChart{name, chart.Bars{Title: title + sub, XLabel: byScenario, YLabel: yLabel,
			Groups: scenarios, Series: byStrategy(metric)}}
	}
	charts := []namedChart{
		perScenario(ChartBought, "Items bought per second", "bought / s", func(r Row) float64 { return r.BoughtPerS }),
		perScenario(ChartRetries, "WATCH retries per item bought", "retries / purchase", func(r Row) float64 {
			if r.RetriesPerPurchase == nil {
				return 0
			}
			return *r.RetriesPerPurchase
		}),
		perScenario(ChartMeanWait, "Mean wait per purchase", "ms", func(r Row) float64 { return r.AvgWaitMs }),
		perScenario(ChartP99Wait, "p99 wait per purchase", "ms", func(r Row) float64 { return r.P99WaitMs }),
	}
	var cells []string
	var oursBought, bookBought, oursWait, bookWait []float64
	for _, r := range doc.Rows {
		if r.Book == nil {
			continue
		}
		cells = append(cells, r.Scenario+" "+r.Strategy)
		oursBought = append(oursBought, r.BoughtPerS)
		bookBought = append(bookBought, r.Book.Bought/r.Book.DurationS)
		oursWait = append(oursWait, r.AvgWaitMs)
		bookWait = append(bookWait, r.Book.AvgWaitMs)
	}
	if len(cells) > 0 {
		beside := func(name, title, yLabel string, ours, book []float64) namedChart {
			return namedChart{name, chart.Bars{Title: title + sub, XLabel: "scenario and strategy", YLabel: yLabel,
				Groups: cells, Series: []chart.Series{{Name: "ours", Values: ours}, {Name: "book", Values: book}}}}
		}
		charts = append(charts,
			beside(ChartBookBought, "Bought per second, ours and the book's", "bought / s", oursBought, bookBought),
			beside(ChartBookMeanWait, "Mean wait per purchase, ours and the book's", "ms", oursWait, bookWait))
	}
	return writeCharts(dir, charts)
}

// WriteAll writes results.md, results.csv, results.json and the charts of
// doc into dir, and returns the names of the files written.
func WriteAll(dir string, doc Document) ([]string, error) {
	files, err := writeDocuments(dir, "results", func(w io.Writer, format string) error {
		return Render(w, format, doc, false)
	})
	if err != nil {
		return files, err
	}
	charts, err := Charts(dir, doc)
	return append(files, charts...), err
}
