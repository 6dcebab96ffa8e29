package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
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

// windowOptions are the parsed flags of "simulate window".
type windowOptions struct {
	redis      string
	scenario   sim.Scenario
	rtts       []time.Duration
	clients    []markettrace.ClientForm
	strategies []market.Strategy
	duration   time.Duration
	seed       uint64
	pick       int
	format     string
	out        string
	in         string
}

const windowUsage = `usage: simulate window [flags]

Sweeps the round trip to Redis (through the delay proxy of -rtt) for one
scenario, in each client form, under each strategy, and reports items
bought per second and WATCH's retries per purchase against it; beside each
WATCH point, the write rate λ to the keys a purchase WATCHes and the
conflict window w it measured, what the model P(commit) = e^(−λ·w)
predicts, and the model's error. Every cell is audited.

Flags:
`

const windowExample = `
Examples:
  simulate window                                    # 5x5, 0/1/2/4 ms, lean and book, 5s per cell
  simulate window -rtts 0,250us,500us,1ms -clients book -strategies watch,fine
  simulate window -duration 10s -out /tmp/window      # writes md, csv, json, svg
  simulate window -in results/window/window.json -format markdown
`

// parseWindowFlags parses and checks the flags of "simulate window".
func parseWindowFlags(args []string, stderr io.Writer) (windowOptions, error) {
	f := newCmdFlags("simulate window", windowUsage, windowExample, stderr)
	var o windowOptions
	f.redis(&o.redis, "")
	scenario := f.String("scenario", "5x5", "one LISTERSxBUYERS scenario")
	f.check(func() (err error) {
		if o.scenario, err = sim.ParseScenario(*scenario); err != nil {
			return fmt.Errorf("-scenario: %w", err)
		}
		return nil
	})
	listFlag(f, &o.rtts, "rtts", "0,1ms,2ms,4ms", fmt.Sprintf("comma-separated round trips to add, each 0..%v", maxRTT),
		"round trip", func(v string) (time.Duration, error) {
			d, err := time.ParseDuration(v)
			if err != nil {
				return 0, fmt.Errorf("%q is not a duration", v)
			}
			if d < 0 || d > maxRTT {
				return 0, fmt.Errorf("%v must be between 0 and %v", d, maxRTT)
			}
			return d, nil
		})
	listFlag(f, &o.clients, "clients", "lean,book", "comma-separated client forms: lean, book",
		"client form", func(v string) (markettrace.ClientForm, error) {
			form, err := markettrace.ParseClientForm(v)
			if err != nil {
				return "", fmt.Errorf("unknown client form %q (want lean or book)", v)
			}
			return form, nil
		})
	f.strategies(&o.strategies)
	f.duration(&o.duration, "how long each cell runs")
	f.seed(&o.seed, "the workers' random prices and choices")
	f.pick(&o.pick)
	f.format(&o.format, report.Formats...)
	f.out(&o.out, "window.md, window.csv, window.json and SVG charts")
	f.StringVar(&o.in, "in", "", "render a saved window.json again (tables, CSV, JSON, charts) instead of measuring")
	return o, f.parse(args)
}

// windowCmd is "simulate window".
func windowCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseWindowFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.in != "" {
		return renderSavedSweep(o, stdout, stderr)
	}
	conn, err := openRedis(ctx, "simulate window", o.redis, stderr)
	if err != nil {
		return err
	}
	defer conn.Close()
	load0 := probe.ReadLoad()
	sw := report.Sweep{
		LoadStart:    report.NewLoad(load0, probe.Load{}),
		Env:          conn.Env(),
		Scenario:     o.scenario.String(),
		DurationS:    o.duration.Seconds(),
		Illustrative: conn.Illustrative(),
		Seed:         o.seed,
		Pick:         o.pick,
		Points:       []report.Point{},
	}
	p := &sweepPlan{o: o, conn: conn, sw: &sw, prog: progress.New(stderr), runID: uuid.NewString()[:8]}
	defer p.close()
	cells := p.cells()
	fmt.Fprintf(stderr, "simulate window: %s of %v each (about %v)\n", progress.Cells(len(cells)), o.duration,
		time.Duration(len(cells))*o.duration)
	fmt.Fprintln(stderr, output.Wrap("simulate window: at the start: "+sw.LoadStart.String(), output.Width))
	cr, runErr := progress.Run(ctx, p.prog, cells)
	sw.Interrupted = cr.Interrupted
	sw.LoadEnd = cr.End(stderr, "simulate window", load0, len(sw.Points))
	if len(sw.Points) > 0 {
		if err := writeSweep(o, sw, stdout, stderr); err != nil {
			return err
		}
	}
	return cr.Verdict(runErr, sw.Violations(), "", len(sw.Points))
}

// sweepPlan is the cells of a sweep, which add their points to sw.
type sweepPlan struct {
	o     windowOptions
	conn  *redisconn.Conn
	sw    *report.Sweep
	prog  *progress.Progress
	runID string
	ln    *link // the link of the round trip of the running cell
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
	for _, rtt := range p.o.rtts {
		for _, form := range p.o.clients {
			for _, st := range p.o.strategies {
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
		if p.ln, err = linkFor(ctx, p.conn, p.ln, rtt); err != nil {
			return "", false, err
		}
		res, err := p.ln.runCell(ctx, form, sim.Config{
			Scenario: o.scenario, Strategy: st, Duration: o.duration, Seed: o.seed, Pick: o.pick,
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
func linkFor(ctx context.Context, conn *redisconn.Conn, ln *link, rtt time.Duration) (*link, error) {
	if ln != nil && ln.delay.RTT == rtt {
		return ln, ln.measure(ctx)
	}
	if ln != nil {
		ln.Close()
	}
	return openLink(ctx, conn, netdelay.Config{RTT: rtt})
}

// writeSweep renders sw on stdout in o's format and, with -out, writes its
// files.
func writeSweep(o windowOptions, sw report.Sweep, stdout, stderr io.Writer) error {
	if err := report.RenderSweep(stdout, o.format, sw); err != nil {
		return err
	}
	if o.out == "" {
		return nil
	}
	files, err := report.WriteSweep(o.out, sw)
	if err != nil {
		return fmt.Errorf("-out %s: %w", o.out, err)
	}
	fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate window: wrote %s into %s", strings.Join(files, ", "), o.out), output.Width))
	return nil
}

// renderSavedSweep renders the sweep saved in o.in, measuring nothing.
func renderSavedSweep(o windowOptions, stdout, stderr io.Writer) error {
	data, err := os.ReadFile(o.in)
	if err != nil {
		return err
	}
	var sw report.Sweep
	if err := json.Unmarshal(data, &sw); err != nil {
		return fmt.Errorf("%s: %w", o.in, err)
	}
	if len(sw.Points) == 0 {
		return fmt.Errorf("%s: no points", o.in)
	}
	return writeSweep(o, sw, stdout, stderr)
}
