package measure

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/lockmarket/lockmarket/internal/redis/netdelay"
	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// RunConfig is what a run measures: the flags of "simulate run".
type RunConfig struct {
	Strategies []market.Strategy
	Scenarios  []sim.Scenario
	Duration   time.Duration
	Seed       uint64
	Pick       int
	Markets    int
	Prefill    int
	Client     markettrace.ClientForm
	RTT        time.Duration
	Jitter     time.Duration
	Profile    string
	Rounds     int
}

// Run measures every scenario of cfg under every strategy on conn, one
// cell at a time with its progress on stderr, and returns the document
// of the cells it measured. Its error is a failed set-up (no rows), a
// failed cell, the audits' violations (progress.ErrViolations) or an
// interruption (progress.ErrInterrupted), in that order.
func Run(ctx context.Context, conn *redisconn.Conn, cfg RunConfig, options ClientOptions,
	stderr io.Writer) (report.Document, error) {
	ln, err := OpenLink(ctx, conn, netdelay.Config{RTT: cfg.RTT, Jitter: cfg.Jitter, Seed: cfg.Seed}, options)
	if err != nil {
		return report.Document{}, err
	}
	defer ln.Close()

	load0 := probe.ReadLoad()
	loads := report.SampleLoad(load0)
	doc := newRunDoc(cfg, conn, ln, load0)
	p := &simPlan{o: cfg, ln: ln, prog: progress.New(stderr), runID: uuid.NewString()[:8],
		slice: cfg.Duration / time.Duration(cfg.Rounds)}
	cells := p.cells()
	n := len(cfg.Scenarios) * len(cfg.Strategies)
	fmt.Fprintln(stderr, output.Wrap("simulate: at the start: "+doc.LoadStart.String(), output.Width))
	fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate: about to measure %s: %s of %v each%s (about %v); %s",
		measuredText(cfg), progress.Cells(n), cfg.Duration, sliceText(cfg.Rounds, p.slice),
		time.Duration(n)*cfg.Duration, report.LinkText(doc)), output.Width))
	cr, runErr := progress.Run(ctx, p.prog, cells)
	cr.Slices = cfg.Rounds
	doc.Interrupted = cr.Interrupted
	doc.Rows = append(doc.Rows, p.rows()...)
	doc.LoadSamples, doc.LoadPeak = loads.Finish(probe.ReadLoad())
	if doc.LoadPeak != nil {
		fmt.Fprintf(stderr, "simulate: peak load average during the run: %.2f (read every %v)\n",
			doc.LoadPeak.Avg1m, report.LoadEvery)
	}
	doc.LoadEnd = cr.End(stderr, "simulate", load0, len(doc.Rows))
	return doc, cr.Verdict(runErr, doc.Violations(), " (see the audit column)", len(doc.Rows))
}

// measuredText says what a run of cfg measures: "purchases and listings
// of scenarios 1x1, 5x1 (listers x buyers) under watch, coarse".
func measuredText(cfg RunConfig) string {
	scenarios := make([]string, len(cfg.Scenarios))
	for i, sc := range cfg.Scenarios {
		scenarios[i] = sc.String()
	}
	strategies := make([]string, len(cfg.Strategies))
	for i, st := range cfg.Strategies {
		strategies[i] = string(st)
	}
	return fmt.Sprintf("purchases and listings of scenarios %s (listers x buyers) under %s",
		strings.Join(scenarios, ", "), strings.Join(strategies, ", "))
}

// sliceText says how a cell's time is sliced, "" for one slice.
func sliceText(rounds int, slice time.Duration) string {
	if rounds < 2 {
		return ""
	}
	return fmt.Sprintf(" in %d slices of %v", rounds, slice)
}

// newRunDoc is the document of run o on conn through ln, without its
// rows, with the machine's load at the start (load0).
func newRunDoc(o RunConfig, conn *redisconn.Conn, ln *Link, load0 probe.Load) report.Document {
	return report.Document{
		Env:             conn.Env(),
		DurationS:       o.Duration.Seconds(),
		Illustrative:    conn.Illustrative(),
		Seed:            o.Seed,
		Pick:            o.Pick,
		Client:          string(o.Client),
		Profile:         o.Profile,
		RTTMs:           latency.Milliseconds(ln.measured),
		RTTConfiguredMs: latency.Milliseconds(ln.delay.RTT),
		JitterMs:        latency.Milliseconds(ln.delay.Jitter),
		Rounds:          o.Rounds,
		LoadStart:       report.NewLoad(load0, probe.Load{}),
		Rows:            []report.Row{},
	}
}

// simPlan is the cells of a run and what they measured. Each cell (a
// scenario under a strategy) is measured in o.Rounds slices; a
// scenario's slices run round by round, every strategy once a round, the
// first strategy of a round rotating.
type simPlan struct {
	o     RunConfig
	ln    *Link
	prog  *progress.Progress
	runID string
	slice time.Duration // the length of one slice
	// acc is what each scenario (by index) under each strategy measured.
	acc [][]measuredCell
}

// measuredCell is a cell's result summed over its slices, and each slice.
type measuredCell struct {
	res    sim.Result
	slices []report.Slice
}

// cells lists the slices to run, in order.
func (p *simPlan) cells() []progress.Cell {
	o := p.o
	p.acc = make([][]measuredCell, len(o.Scenarios))
	var cells []progress.Cell
	for si, sc := range o.Scenarios {
		p.acc[si] = make([]measuredCell, len(o.Strategies))
		for round := range o.Rounds {
			for k := range o.Strategies {
				sti := (k + si + round) % len(o.Strategies)
				cells = append(cells, p.cell(sc, o.Strategies[sti], round, &p.acc[si][sti]))
			}
		}
	}
	return cells
}

// cell is the slice of round (from 0) of scenario sc under strategy st,
// which adds what it measured to m.
func (p *simPlan) cell(sc sim.Scenario, st market.Strategy, round int, m *measuredCell) progress.Cell {
	o := p.o
	label := fmt.Sprintf("%-6s %-6s", sc, st)
	if o.Rounds > 1 {
		label += fmt.Sprintf(" %d/%d", round+1, o.Rounds)
	}
	return progress.Cell{Label: label, Run: func(ctx context.Context) (string, bool, error) {
		if o.Prefill > 0 {
			// Start each cell's RSS figure from what it needs,
			// not from the previous cell's leftovers.
			debug.FreeOSMemory()
		}
		res, err := p.ln.RunCell(ctx, o.Client, sim.Config{
			Scenario: sc, Strategy: st, Duration: p.slice, Seed: o.Seed, Pick: o.Pick,
			Name:     fmt.Sprintf("sim-%s-%s-%s-%d", p.runID, sc, st, round+1),
			Progress: p.prog.Update, PrefillProgress: p.prog.Prefill,
			Markets: o.Markets, Prefill: o.Prefill,
		})
		if err != nil {
			return "", false, err
		}
		m.slices = append(m.slices, report.SliceOf(round+1, res))
		if len(m.slices) == 1 {
			m.res = res
		} else {
			m.res.Add(res)
		}
		if res.FirstError != "" {
			p.prog.Note(output.Wrap("  first error: "+res.FirstError, output.Width))
		}
		return progress.RowSummary(report.FromResult(res)), res.Interrupted, nil
	}}
}

// rows are the report's rows of the cells that ran a slice at least, by
// scenario and then strategy; a cell short of its slices is interrupted.
func (p *simPlan) rows() []report.Row {
	var rows []report.Row
	for si := range p.acc {
		for _, m := range p.acc[si] {
			if len(m.slices) == 0 {
				continue
			}
			row := report.FromResult(m.res)
			row.SetSlices(m.slices)
			row.Interrupted = row.Interrupted || len(m.slices) < p.o.Rounds
			rows = append(rows, row)
		}
	}
	return rows
}
