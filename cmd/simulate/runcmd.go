package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/lockmarket/lockmarket/internal/redis/netdelay"
	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// maxDuration bounds -duration: a day per cell is already absurd.
const maxDuration = 24 * time.Hour

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
  simulate -scenarios 1x1,5x5 -rounds 10     # ten 0.5s slices per cell, in turn across strategies
  simulate -scenarios 1x1,10x10,50x50 -strategies fine,lua -format json
  simulate -scenarios 5x5 -prefill 100000     # a market already holding 10^5 listings
  simulate -redis HOST:PORT,HOST:PORT,HOST:PORT -markets 3  # a cluster's nodes: a market per master
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
	loads := report.SampleLoad(load0)
	doc := newRunDoc(o, conn, ln, load0)
	p := &simPlan{o: o, ln: ln, prog: progress.New(stderr), runID: uuid.NewString()[:8],
		slice: o.duration / time.Duration(o.rounds)}
	cells := p.cells()
	fmt.Fprintln(stderr, output.Wrap("simulate: at the start: "+doc.LoadStart.String(), output.Width))
	fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate: %s of %v each%s (about %v); %s",
		progress.Cells(len(o.scenarios)*len(o.strategies)), o.duration, sliceText(o.rounds, p.slice),
		time.Duration(len(o.scenarios)*len(o.strategies))*o.duration, report.LinkText(doc)), output.Width))
	cr, runErr := progress.Run(ctx, p.prog, cells)
	cr.Slices = o.rounds
	doc.Interrupted = cr.Interrupted
	doc.Rows = append(doc.Rows, p.rows()...)
	doc.LoadSamples, doc.LoadPeak = loads.Finish(probe.ReadLoad())
	if doc.LoadPeak != nil {
		fmt.Fprintf(stderr, "simulate: peak load average during the run: %.2f (read every %v)\n",
			doc.LoadPeak.Avg1m, report.LoadEvery)
	}
	doc.LoadEnd = cr.End(stderr, "simulate", load0, len(doc.Rows))
	if len(doc.Rows) > 0 {
		if err := writeRun(o, doc, stdout, stderr); err != nil {
			return err
		}
	}
	return cr.Verdict(runErr, doc.Violations(), " (see the audit column)", len(doc.Rows))
}

// writeRun prints doc in o's format, and with -out writes its files.
func writeRun(o runOptions, doc report.Document, stdout, stderr io.Writer) error {
	if err := report.Render(stdout, o.format, doc, o.wide); err != nil {
		return err
	}
	if o.out == "" {
		return nil
	}
	files, err := report.WriteAll(o.out, doc)
	if err != nil {
		return fmt.Errorf("-out %s: %w", o.out, err)
	}
	fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate: wrote %s into %s", strings.Join(files, ", "), o.out), output.Width))
	return nil
}

// sliceText says how a cell's time is sliced, "" for one slice.
func sliceText(rounds int, slice time.Duration) string {
	if rounds < 2 {
		return ""
	}
	return fmt.Sprintf(" in %d slices of %v", rounds, slice)
}
