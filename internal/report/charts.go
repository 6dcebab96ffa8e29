package report

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
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

// series is one set of bars of a grouped bar chart.
type series struct {
	name   string
	values []float64 // one per group; NaN for "no value"
}

// groupedBars is a bar chart with one group per label and one bar per
// series in each group.
type groupedBars struct {
	title, xLabel, yLabel string
	groups                []string
	series                []series
}

// logSpread is the ratio of the largest to the smallest positive value
// beyond which a chart switches to a log axis.
const logSpread = 100

// plainTicks are the default ticks labelled without trailing zeros
// ("5000", not "5000.00") and without the residue of binary fractions
// ("0.6", not "0.6000000000000001").
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(math.Round(ticks[i].Value*1e9)/1e9, 'f', -1, 64)
		}
	}
	return ticks
}

// render draws the chart as SVG into path.
func (g groupedBars) render(path string) error {
	var positive []float64
	for _, s := range g.series {
		for _, v := range s.values {
			if v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
				positive = append(positive, v)
			}
		}
	}
	useLog := false
	floor := 0.0
	if len(positive) > 0 {
		lo, hi := slices.Min(positive), slices.Max(positive)
		if hi/lo > logSpread {
			useLog = true
			// A decade below the smallest value, so that it shows as a bar;
			// zeros sit on the floor (a bar of no height).
			floor = math.Pow(10, math.Floor(math.Log10(lo))-1)
		}
	}

	p := plot.New()
	p.Title.Text = g.title
	p.Y.Label.Text = g.yLabel
	if useLog {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Label.Text += " (log scale)"
	} else {
		p.Y.Tick.Marker = plainTicks{}
	}
	p.Legend.Top = true
	p.Legend.YOffs = -vg.Points(6)
	p.NominalX(g.groups...)
	p.X.Label.Text = g.xLabel
	// Half a group of room on either side, so no label is cut off.
	p.X.Min, p.X.Max = -0.6, float64(len(g.groups))-0.4

	n := len(g.series)
	barWidth := vg.Points(14)
	if n > 4 {
		barWidth = vg.Points(56 / float64(n))
	}
	for i, s := range g.series {
		vals := make(plotter.Values, len(s.values))
		base := make(plotter.Values, len(s.values))
		for j, v := range s.values {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				v = 0
			}
			if useLog {
				// Bars on a log axis cannot start at zero: stack each bar on
				// an invisible one of height floor.
				base[j] = floor
				v = max(v-floor, 0)
			}
			vals[j] = v
		}
		bars, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return err
		}
		if useLog {
			under, err := plotter.NewBarChart(base, barWidth)
			if err != nil {
				return err
			}
			bars.StackOn(under)
		}
		bars.LineStyle.Width = vg.Length(0)
		bars.Color = plotutil.Color(i)
		bars.Offset = vg.Length(float64(i)-float64(n-1)/2) * barWidth
		p.Add(bars)
		p.Legend.Add(s.name, bars)
	}
	if len(positive) == 0 {
		p.Y.Min, p.Y.Max = 0, 1
	} else if !useLog {
		p.Y.Min = 0
		p.Y.Max *= 1.3 // room for the legend
	} else {
		p.Y.Max *= 8
	}
	width := max(16*vg.Centimeter, vg.Length(len(g.groups))*(vg.Length(n)*barWidth+vg.Points(24))+vg.Points(80))
	return p.Save(width, 10*vg.Centimeter, path)
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
	byStrategy := func(metric func(Row) float64) []series {
		out := make([]series, len(strategies))
		for i, st := range strategies {
			out[i] = series{name: st, values: make([]float64, len(scenarios))}
			for j := range scenarios {
				out[i].values[j] = math.NaN()
			}
		}
		for _, r := range doc.Rows {
			i, j := slices.Index(strategies, r.Strategy), slices.Index(scenarios, r.Label())
			out[i].values[j] = metric(r)
		}
		return out
	}
	labels := scenarios
	const byScenario = "scenario (listers x buyers)"
	sub := fmt.Sprintf(" (%s, %gs per cell)", doc.Redis.Mode, doc.DurationS)
	if doc.Illustrative {
		sub = " (miniredis: illustrative only)"
	}
	charts := []struct {
		file string
		g    groupedBars
	}{
		{ChartBought, groupedBars{"Items bought per second" + sub, byScenario, "bought / s", labels,
			byStrategy(func(r Row) float64 { return r.BoughtPerS })}},
		{ChartRetries, groupedBars{"WATCH retries per item bought" + sub, byScenario, "retries / purchase", labels,
			byStrategy(func(r Row) float64 {
				if r.RetriesPerPurchase == nil {
					return 0
				}
				return *r.RetriesPerPurchase
			})}},
		{ChartMeanWait, groupedBars{"Mean wait per purchase" + sub, byScenario, "ms", labels,
			byStrategy(func(r Row) float64 { return r.AvgWaitMs })}},
		{ChartP99Wait, groupedBars{"p99 wait per purchase" + sub, byScenario, "ms", labels,
			byStrategy(func(r Row) float64 { return r.P99WaitMs })}},
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
		charts = append(charts,
			struct {
				file string
				g    groupedBars
			}{ChartBookBought, groupedBars{"Bought per second, ours and the book's" + sub, "scenario and strategy", "bought / s",
				cells, []series{{"ours", oursBought}, {"book", bookBought}}}},
			struct {
				file string
				g    groupedBars
			}{ChartBookMeanWait, groupedBars{"Mean wait per purchase, ours and the book's" + sub, "scenario and strategy", "ms",
				cells, []series{{"ours", oursWait}, {"book", bookWait}}}},
		)
	}
	var files []string
	for _, c := range charts {
		if err := c.g.render(filepath.Join(dir, c.file)); err != nil {
			return files, fmt.Errorf("chart %s: %w", c.file, err)
		}
		files = append(files, c.file)
	}
	return files, nil
}

// WriteAll writes results.md, results.csv, results.json and the charts of
// doc into dir, and returns the names of the files written.
func WriteAll(dir string, doc Document) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, f := range []struct{ name, format string }{
		{"results.md", "markdown"}, {"results.csv", "csv"}, {"results.json", "json"},
	} {
		out, err := os.Create(filepath.Join(dir, f.name))
		if err != nil {
			return files, err
		}
		err = Render(out, f.format, doc, false)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return files, fmt.Errorf("%s: %w", f.name, err)
		}
		files = append(files, f.name)
	}
	charts, err := Charts(dir, doc)
	return append(files, charts...), err
}
