package measure

import (
	"context"
	"fmt"
	"io"
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

// WindowConfig is what a sweep of the round trip measures: the flags of
// "simulate window".
type WindowConfig struct {
	Scenario   sim.Scenario
	RTTs       []time.Duration
	Clients    []markettrace.ClientForm
	Strategies []market.Strategy
	Duration   time.Duration
	Seed       uint64
	Pick       int
}

// Window measures one cell per round trip, client form and strategy of
// cfg on conn, one at a time with its progress on stderr, and returns the
// sweep of the cells it measured; its error is as Run's.
func Window(ctx context.Context, conn *redisconn.Conn, cfg WindowConfig, options ClientOptions,
	stderr io.Writer) (report.Sweep, error) {
	load0 := probe.ReadLoad()
	sw := report.Sweep{
		LoadStart:    report.NewLoad(load0, probe.Load{}),
		Env:          conn.Env(),
		Scenario:     cfg.Scenario.String(),
		DurationS:    cfg.Duration.Seconds(),
		Illustrative: conn.Illustrative(),
		Seed:         cfg.Seed,
		Pick:         cfg.Pick,
		Points:       []report.Point{},
	}
	p := &sweepPlan{o: cfg, conn: conn, sw: &sw, prog: progress.New(stderr), runID: uuid.NewString()[:8],
		options: options}
	defer p.close()
	cells := p.cells()
	fmt.Fprintf(stderr, "simulate window: %s of %v each (about %v)\n", progress.Cells(len(cells)), cfg.Duration,
		time.Duration(len(cells))*cfg.Duration)
	fmt.Fprintln(stderr, output.Wrap("simulate window: at the start: "+sw.LoadStart.String(), output.Width))
	cr, runErr := progress.Run(ctx, p.prog, cells)
	sw.Interrupted = cr.Interrupted
	sw.LoadEnd = cr.End(stderr, "simulate window", load0, len(sw.Points))
	return sw, cr.Verdict(runErr, sw.Violations(), "", len(sw.Points))
}

// sweepPlan is the cells of a sweep, which add their points to sw.
type sweepPlan struct {
	o       WindowConfig
	conn    *redisconn.Conn
	sw      *report.Sweep
	prog    *progress.Progress
	runID   string
	options ClientOptions
	ln      *Link // the link of the round trip of the running cell
}

// close closes the last cell's link.
func (p *sweepPlan) close() {
	if p.ln != nil {
		p.ln.Close()
	}
}

// cells lists the cells, by round trip, client form and strategy.
func (p *sweepPlan) cells() []progress.Cell {
	var cells []progress.Cell
	for _, rtt := range p.o.RTTs {
		for _, form := range p.o.Clients {
			for _, st := range p.o.Strategies {
				cells = append(cells, p.cell(rtt, form, st))
			}
		}
	}
	return cells
}

// cell runs strategy st with client form over a link of round trip rtt.
func (p *sweepPlan) cell(rtt time.Duration, form markettrace.ClientForm, st market.Strategy) progress.Cell {
	o := p.o
	return progress.Cell{Label: fmt.Sprintf("rtt %-6v %-4s %-6s", rtt, form, st), Run: func(ctx context.Context) (string, bool, error) {
		var err error
		if p.ln, err = linkFor(ctx, p.conn, p.ln, rtt, p.options); err != nil {
			return "", false, err
		}
		res, err := p.ln.RunCell(ctx, form, sim.Config{
			Scenario: o.Scenario, Strategy: st, Duration: o.Duration, Seed: o.Seed, Pick: o.Pick,
			Name:     fmt.Sprintf("win-%s-%d-%s-%s", p.runID, rtt.Microseconds(), form, st),
			Progress: p.prog.Update,
		})
		if err != nil {
			return "", false, err
		}
		row := report.FromResult(res)
		p.sw.Points = append(p.sw.Points, report.Point{Client: string(form),
			RTTConfiguredMs: latency.Milliseconds(rtt), RTTMs: latency.Milliseconds(p.ln.measured), Row: row})
		if res.FirstError != "" {
			p.prog.Note(output.Wrap("  first error: "+res.FirstError, output.Width))
		}
		return progress.RowSummary(row), res.Interrupted, nil
	}}
}

// linkFor returns the link to conn's server(s) with round trip rtt,
// measured now: ln when it is that link, else a new one (ln closed).
func linkFor(ctx context.Context, conn *redisconn.Conn, ln *Link, rtt time.Duration, options ClientOptions) (*Link, error) {
	if ln != nil && ln.delay.RTT == rtt {
		return ln, ln.measure(ctx)
	}
	if ln != nil {
		ln.Close()
	}
	return OpenLink(ctx, conn, netdelay.Config{RTT: rtt}, options)
}
