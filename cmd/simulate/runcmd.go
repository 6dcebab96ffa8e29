package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/bookform"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/measure"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// maxDuration bounds -duration: a day per cell is already absurd.
const maxDuration = 24 * time.Hour

// runOptions are the parsed flags of "simulate run".
type runOptions struct {
	measure.RunConfig
	redis  string
	format string
	wide   bool
	out    string
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
// wrapping output.ErrUsage; -h prints the help and returns flag.ErrHelp.
func parseRunFlags(args []string, stderr io.Writer) (runOptions, error) {
	f := newCmdFlags("simulate run", runUsage, runExample, stderr)
	var o runOptions
	f.redis(&o.redis, "")
	f.strategies(&o.Strategies)
	scenarios := f.String("scenarios", "1x1,5x1,5x5", fmt.Sprintf("comma-separated LISTERSxBUYERS scenarios, each count 1..%d", sim.MaxWorkers))
	f.Check(func() (err error) {
		if o.Scenarios, err = sim.ParseScenarios(*scenarios); err != nil {
			return fmt.Errorf("-scenarios: %w", err)
		}
		return nil
	})
	f.duration(&o.Duration, "how long each cell runs (the book ran 60s)")
	f.seed(&o.Seed, "the workers' random prices and choices")
	f.pick(&o.Pick)
	f.format(&o.format, report.Formats...)
	f.wide(&o.wide, "the book's figures in parentheses")
	f.IntIn(&o.Markets, "markets", 1, 1, sim.MaxMarkets, fmt.Sprintf("run this many independent markets at once in each cell (1..%d), each with the scenario's listers and buyers; on a cluster their hash tags go to the masters in turn", sim.MaxMarkets))
	f.IntIn(&o.Prefill, "prefill", 0, 0, sim.MaxPrefill, fmt.Sprintf("fill each market with this many listings (priced above the listers' range) before the workers start, and report Redis memory per listing (0..%d)", sim.MaxPrefill))
	f.rounds(&o.Rounds, &o.Duration)
	f.Check(func() error { return measure.CheckBounds(o.Scenarios, o.Markets, o.Prefill) })
	f.out(&o.out, "results.md, results.csv, results.json and SVG charts")
	f.link(&o.Client, &o.RTT, &o.Jitter, &o.Profile)
	return o, f.Read(args)
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
	doc, err := measure.Run(ctx, conn, o.RunConfig, bookform.Options, stderr)
	if len(doc.Rows) > 0 {
		if err := writeRun(o, doc, stdout, stderr); err != nil {
			return err
		}
	}
	return err
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

// rounds declares -rounds, the slices each cell's duration is split into.
func (f *cmdFlags) rounds(p *int, duration *time.Duration) {
	f.IntIn(p, "rounds", 5, 1, measure.MaxRounds, fmt.Sprintf("split each cell's duration into this many slices, "+
		"each a fresh market, run in turn across the strategies (1..%d): a change in the machine's load "+
		"then hits every strategy alike, and each figure gets its range over the slices", measure.MaxRounds))
	f.Check(func() error {
		if slice := *duration / time.Duration(*p); slice < measure.MinSlice {
			return fmt.Errorf("-duration %v in -rounds %d makes slices of %v; each must last at least %v "+
				"(a longer -duration or fewer -rounds)", *duration, *p, slice, measure.MinSlice)
		}
		return nil
	})
}

// link declares -client, -rtt, -jitter and -profile, and the check that
// applies the profile to those of the others not given and sets form,
// rtt and jitter.
func (f *cmdFlags) link(form *markettrace.ClientForm, rtt, jitter *time.Duration, profile *string) {
	client := f.String("client", string(markettrace.LeanClient), "command sequences: lean (pipelined: two round trips per uncontended operation) or book (the book's listings, one command per round trip, and its lock with timeout)")
	f.DurationVar(rtt, "rtt", 0, fmt.Sprintf("add this much to every round trip to Redis, through a TCP proxy in this process (0..%v); the run reports the round trip it measured", measure.MaxRTT))
	f.DurationVar(jitter, "jitter", 0, fmt.Sprintf("add to each reply's delay a random part drawn from an exponential distribution of this mean, seeded by -seed, replies kept in order (0..%v; see internal/redis/netdelay)", measure.MaxRTT))
	f.StringVar(profile, "profile", "", "a preset of -client, -rtt and -jitter: "+measure.ProfileHelp()+"; those flags given as well override it")
	f.Check(func() error {
		if *profile != "" {
			p, ok := measure.LookupProfile(*profile)
			if !ok {
				return fmt.Errorf("-profile %q: want one of %s", *profile, measure.ProfileNames())
			}
			if !f.Given("client") {
				*client = string(p.Client)
			}
			if !f.Given("rtt") {
				*rtt = p.RTT
			}
			if !f.Given("jitter") {
				*jitter = p.Jitter
			}
		}
		var err error
		if *form, err = markettrace.ParseClientForm(*client); err != nil {
			return fmt.Errorf("-client %q: want lean or book", *client)
		}
		if *rtt < 0 || *rtt > measure.MaxRTT {
			return fmt.Errorf("-rtt %v must be between 0 and %v", *rtt, measure.MaxRTT)
		}
		if *jitter < 0 || *jitter > measure.MaxRTT {
			return fmt.Errorf("-jitter %v must be between 0 and %v", *jitter, measure.MaxRTT)
		}
		return nil
	})
}
