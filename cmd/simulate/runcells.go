package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
	"github.com/lockmarket/lockmarket/market"
)

// newRunDoc is the document of run o on conn through ln, without its
// rows, with the machine's load at the start (load0).
func newRunDoc(o runOptions, conn *redisconn.Conn, ln *link, load0 probe.Load) report.Document {
	return report.Document{
		Env:             conn.Env(),
		DurationS:       o.duration.Seconds(),
		Illustrative:    conn.Illustrative(),
		Seed:            o.seed,
		Pick:            o.pick,
		Client:          string(o.client),
		Profile:         o.profile,
		RTTMs:           latency.Milliseconds(ln.measured),
		RTTConfiguredMs: latency.Milliseconds(ln.delay.RTT),
		JitterMs:        latency.Milliseconds(ln.delay.Jitter),
		Rounds:          o.rounds,
		LoadStart:       report.NewLoad(load0, probe.Load{}),
		Rows:            []report.Row{},
	}
}

// simPlan is the cells of a run and what they measured. Each cell (a
// scenario under a strategy) is measured in o.rounds slices; a
// scenario's slices run round by round, every strategy once a round, the
// first strategy of a round rotating.
type simPlan struct {
	o     runOptions
	ln    *link
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
	p.acc = make([][]measuredCell, len(o.scenarios))
	var cells []progress.Cell
	for si, sc := range o.scenarios {
		p.acc[si] = make([]measuredCell, len(o.strategies))
		for round := range o.rounds {
			for k := range o.strategies {
				sti := (k + si + round) % len(o.strategies)
				cells = append(cells, p.cell(sc, o.strategies[sti], round, &p.acc[si][sti]))
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
	if o.rounds > 1 {
		label += fmt.Sprintf(" %d/%d", round+1, o.rounds)
	}
	return progress.Cell{Label: label, Run: func(ctx context.Context) (string, bool, error) {
		if o.prefill > 0 {
			// Start each cell's RSS figure from what it needs,
			// not from the previous cell's leftovers.
			debug.FreeOSMemory()
		}
		res, err := p.ln.runCell(ctx, o.client, sim.Config{
			Scenario: sc, Strategy: st, Duration: p.slice, Seed: o.seed, Pick: o.pick,
			Name:     fmt.Sprintf("sim-%s-%s-%s-%d", p.runID, sc, st, round+1),
			Progress: p.prog.Update, PrefillProgress: p.prog.Prefill,
			Markets: o.markets, Prefill: o.prefill,
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
			row.Interrupted = row.Interrupted || len(m.slices) < p.o.rounds
			rows = append(rows, row)
		}
	}
	return rows
}
