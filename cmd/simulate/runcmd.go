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

	"github.com/lockmarket/lockmarket/internal/latency"
	"github.com/lockmarket/lockmarket/internal/netdelay"
	"github.com/lockmarket/lockmarket/internal/report"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/market"
)

func init() {
	subcommands["run"] = subcommand{run: runSim,
		summary: "listers and buyers under each strategy, beside the book's tables (the default)"}
}

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
	client     market.ClientForm
	rtt        time.Duration
	jitter     time.Duration
	profile    string
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
		Rows:            []report.Row{},
	}
	runID := uuid.NewString()[:8]
	prog := newProgress(stderr)
	var cells []cell
	for _, sc := range o.scenarios {
		for _, st := range o.strategies {
			cells = append(cells, cell{label: fmt.Sprintf("%-6s %-6s", sc, st), run: func(ctx context.Context) (string, bool, error) {
				if o.prefill > 0 {
					// Start each cell's RSS figure from what it needs,
					// not from the previous cell's leftovers.
					debug.FreeOSMemory()
				}
				res, err := ln.runCell(ctx, o.client, sim.Config{
					Scenario: sc, Strategy: st, Duration: o.duration, Seed: o.seed, Pick: o.pick,
					Name:     fmt.Sprintf("sim-%s-%s-%s", runID, sc, st),
					Progress: prog.update, PrefillProgress: prog.prefill,
					Markets: o.markets, Prefill: o.prefill,
				})
				if err != nil {
					return "", false, err
				}
				row := report.FromResult(res)
				doc.Rows = append(doc.Rows, row)
				return rowSummary(row), res.Interrupted, nil
			}})
		}
	}
	fmt.Fprintf(stderr, "simulate: %s of %v each (about %v); %s\n", cellCount(len(cells)), o.duration,
		time.Duration(len(cells))*o.duration, report.LinkText(doc))
	cr, runErr := eachCell(ctx, prog, cells)
	doc.Interrupted = cr.interrupted
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
			fmt.Fprintf(stderr, "simulate: wrote %s into %s\n", strings.Join(files, ", "), o.out)
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
