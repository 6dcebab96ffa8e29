package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/lockmarket/lockmarket/internal/redis/netdelay"
	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/report"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/latency"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// maxDuration bounds -duration: a day per cell is already absurd.
const maxDuration = 24 * time.Hour

// errViolations is returned when an audit found broken invariants.
var errViolations = errors.New("the audit found violations")

// runOptions are the parsed flags of "simulate run".
type runOptions struct {
	redis      string
	strategies []market.Strategy
	scenarios  []sim.Scenario
	duration   time.Duration
	seed       uint64
	pick       int
	format     string
	wide       bool
	out        string
	markets    int
	prefill    int
	client     markettrace.ClientForm
	rtt        time.Duration
	jitter     time.Duration
	profile    string
	rounds     int
}

const runUsage = `usage: simulate [run] [flags]

Runs listers and buyers against a fresh market for each scenario and
strategy, audits every cell, and prints our figures beside the book's
(tables 6.1-6.3 and the chapter 11 Lua table, scaled to the same duration).

Flags:
`

const runExample = `
Examples:
  simulate                                   # book scenarios, all strategies, 5s per cell
  simulate -duration 60s -out /tmp/repro     # the book's length; writes md, csv, json, svg
  simulate -scenarios 1x1,5x5 -rounds 10     # ten 0.5s slices per cell, in turn across the strategies
  simulate -scenarios 1x1,10x10,50x50 -strategies fine,lua -format json
  simulate -scenarios 5x5 -prefill 100000     # a market already holding 10^5 listings
  simulate -redis HOST:PORT,HOST:PORT,HOST:PORT -markets 3  # a running cluster's nodes: a market per master
  simulate -profile book -duration 60s       # the book's command sequences and round trip
  simulate -client book -rtt 1ms -scenarios 5x1 -strategies watch,fine
`

// parseRunFlags parses and checks the flags of "simulate run". On a
// mistake it prints the problem and a hint to stderr and returns an error
// wrapping errUsage; -h prints the help and returns flag.ErrHelp.
func parseRunFlags(args []string, stderr io.Writer) (runOptions, error) {
	f := newCmdFlags("simulate run", runUsage, runExample, stderr)
	var o runOptions
	f.redis(&o.redis, "")
	f.strategies(&o.strategies)
	scenarios := f.String("scenarios", "1x1,5x1,5x5", fmt.Sprintf("comma-separated LISTERSxBUYERS scenarios, each count 1..%d", sim.MaxWorkers))
	f.check(func() (err error) {
		if o.scenarios, err = sim.ParseScenarios(*scenarios); err != nil {
			return fmt.Errorf("-scenarios: %w", err)
		}
		return nil
	})
	f.duration(&o.duration, "how long each cell runs (the book ran 60s)")
	f.seed(&o.seed, "the workers' random prices and choices")
	f.pick(&o.pick)
	f.format(&o.format, report.Formats...)
	f.wide(&o.wide, "the book's figures in parentheses")
	f.intIn(&o.markets, "markets", 1, 1, sim.MaxMarkets, fmt.Sprintf("run this many independent markets at once in each cell (1..%d), each with the scenario's listers and buyers; on a cluster their hash tags go to the masters in turn", sim.MaxMarkets))
	f.intIn(&o.prefill, "prefill", 0, 0, sim.MaxPrefill, fmt.Sprintf("fill each market with this many listings (priced above the listers' range) before the workers start, and report Redis memory per listing (0..%d)", sim.MaxPrefill))
	f.rounds(&o.rounds, &o.duration)
	f.check(func() error { return checkBounds(o.scenarios, o.markets, o.prefill) })
	f.out(&o.out, "results.md, results.csv, results.json and SVG charts")
	f.link(&o.client, &o.rtt, &o.jitter, &o.profile)
	return o, f.parse(args)
}

// runSim is "simulate run": every scenario under every strategy, one cell
// at a time, then the report.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	conn, err := openRedis(ctx, "simulate run", o.redis, stderr)
	if err != nil {
		return err
	}
	defer conn.Close()
	ln, err := openLink(ctx, conn, netdelay.Config{RTT: o.rtt, Jitter: o.jitter, Seed: o.seed})
	if err != nil {
		return err
	}
	defer ln.Close()

	load0 := probe.ReadLoad()
	doc := report.Document{
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
	runID := uuid.NewString()[:8]
	prog := newProgress(stderr)
	// Each cell (a scenario under a strategy) is measured in o.rounds
	// slices; a scenario's slices run round by round, every strategy once
	// a round, the first strategy of a round rotating.
	type measured struct {
		res    sim.Result
		slices []report.Slice
	}
	acc := make([][]measured, len(o.scenarios))
	slice := o.duration / time.Duration(o.rounds)
	var cells []cell
	for si, sc := range o.scenarios {
		acc[si] = make([]measured, len(o.strategies))
		for round := range o.rounds {
			for k := range o.strategies {
				sti := (k + si + round) % len(o.strategies)
				st, m := o.strategies[sti], &acc[si][sti]
				label := fmt.Sprintf("%-6s %-6s", sc, st)
				if o.rounds > 1 {
					label += fmt.Sprintf(" %d/%d", round+1, o.rounds)
				}
				cells = append(cells, cell{label: label, run: func(ctx context.Context) (string, bool, error) {
					if o.prefill > 0 {
						// Start each cell's RSS figure from what it needs,
						// not from the previous cell's leftovers.
						debug.FreeOSMemory()
					}
					res, err := ln.runCell(ctx, o.client, sim.Config{
						Scenario: sc, Strategy: st, Duration: slice, Seed: o.seed, Pick: o.pick,
						Name:     fmt.Sprintf("sim-%s-%s-%s-%d", runID, sc, st, round+1),
						Progress: prog.update, PrefillProgress: prog.prefill,
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
						prog.note(output.Wrap("  first error: "+res.FirstError, output.Width))
					}
					return rowSummary(report.FromResult(res)), res.Interrupted, nil
				}})
			}
		}
	}
	fmt.Fprintln(stderr, output.Wrap("simulate: at the start: "+doc.LoadStart.String(), output.Width))
	fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate: %s of %v each%s (about %v); %s",
		cellCount(len(o.scenarios)*len(o.strategies)), o.duration, sliceText(o.rounds, slice),
		time.Duration(len(o.scenarios)*len(o.strategies))*o.duration, report.LinkText(doc)), output.Width))
	cr, runErr := eachCell(ctx, prog, cells)
	cr.slices = o.rounds
	doc.Interrupted = cr.interrupted
	for si := range acc {
		for _, m := range acc[si] {
			if len(m.slices) == 0 {
				continue
			}
			row := report.FromResult(m.res)
			row.SetSlices(m.slices)
			row.Interrupted = row.Interrupted || len(m.slices) < o.rounds
			doc.Rows = append(doc.Rows, row)
		}
	}
	doc.LoadEnd = report.NewLoad(probe.ReadLoad(), load0)
	fmt.Fprintln(stderr, output.Wrap("simulate: at the end: "+doc.LoadEnd.String(), output.Width))
	cr.report(stderr, "simulate", len(doc.Rows))
	if len(doc.Rows) > 0 {
		if err := report.Render(stdout, o.format, doc, o.wide); err != nil {
			return err
		}
		if o.out != "" {
			files, err := report.WriteAll(o.out, doc)
			if err != nil {
				return fmt.Errorf("-out %s: %w", o.out, err)
			}
			fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate: wrote %s into %s", strings.Join(files, ", "), o.out), output.Width))
		}
	}
	switch {
	case runErr != nil:
		return runErr
	case doc.Violations() > 0:
		return fmt.Errorf("%w: %d in all (see the audit column)", errViolations, doc.Violations())
	}
	return cr.err(len(doc.Rows))
}

// sliceText says how a cell's time is sliced, "" for one slice.
func sliceText(rounds int, slice time.Duration) string {
	if rounds < 2 {
		return ""
	}
	return fmt.Sprintf(" in %d slices of %v", rounds, slice)
}
