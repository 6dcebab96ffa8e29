package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/bookform"
	"github.com/lockmarket/lockmarket/internal/latency"
	"github.com/lockmarket/lockmarket/internal/netdelay"
	"github.com/lockmarket/lockmarket/internal/redisconn"
	"github.com/lockmarket/lockmarket/internal/report"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/market"
)

func init() {
	subcommands["window"] = subcommand{run: windowCmd,
		summary: "sweep the round trip: bought/s and WATCH retries against it, beside the model e^(-λw)"}
}

// windowOptions are the parsed flags of "simulate window".
type windowOptions struct {
	redis      string
	scenario   sim.Scenario
	rtts       []time.Duration
	clients    []market.ClientForm
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
	fs := flag.NewFlagSet("simulate window", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o windowOptions
	var scenario, rtts, clients, strategies string
	fs.StringVar(&o.redis, "redis", "auto", "Redis: auto (REDIS_URL, else a private redis-server from PATH, else embedded miniredis), a redis:// URL, or host:port[,host:port...] of a cluster")
	fs.StringVar(&scenario, "scenario", "5x5", "one LISTERSxBUYERS scenario")
	fs.StringVar(&rtts, "rtts", "0,1ms,2ms,4ms", fmt.Sprintf("comma-separated round trips to add, each 0..%v", maxRTT))
	fs.StringVar(&clients, "clients", "lean,book", "comma-separated client forms: lean, book")
	fs.StringVar(&strategies, "strategies", "watch,coarse,fine,lua", "comma-separated strategies: watch, coarse, fine, lua")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "how long each cell runs")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the workers' random prices and choices")
	fs.IntVar(&o.pick, "pick", sim.DefaultPick, "a buyer buys one of the K cheapest listings, chosen at random")
	fs.StringVar(&o.format, "format", "table", "output: "+strings.Join(report.Formats, ", "))
	fs.StringVar(&o.out, "out", "", "also write window.md, window.csv, window.json and SVG charts into this directory")
	fs.StringVar(&o.in, "in", "", "render a saved window.json again (tables, CSV, JSON, charts) instead of measuring")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), windowUsage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), windowExample)
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return o, err
	}
	bad := func(format string, a ...any) (windowOptions, error) {
		return o, usagef(stderr, fs.Name(), format, a...)
	}
	var err error
	if o.scenario, err = sim.ParseScenario(scenario); err != nil {
		return bad("-scenario: %v", err)
	}
	for _, v := range strings.Split(rtts, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return bad("-rtts: %q is not a duration", v)
		}
		if d < 0 || d > maxRTT {
			return bad("-rtts: %v must be between 0 and %v", d, maxRTT)
		}
		if !slices.Contains(o.rtts, d) {
			o.rtts = append(o.rtts, d)
		}
	}
	if len(o.rtts) == 0 {
		return bad("-rtts: no round trip given")
	}
	for _, v := range strings.Split(clients, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		f, err := market.ParseClientForm(v)
		if err != nil {
			return bad("-clients: unknown client form %q (want lean or book)", v)
		}
		if !slices.Contains(o.clients, f) {
			o.clients = append(o.clients, f)
		}
	}
	if len(o.clients) == 0 {
		return bad("-clients: no client form given")
	}
	for _, v := range strings.Split(strategies, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		st, err := market.ParseStrategy(v)
		if err != nil {
			return bad("-strategies: unknown strategy %q (want watch, coarse, fine or lua)", v)
		}
		if !slices.Contains(o.strategies, st) {
			o.strategies = append(o.strategies, st)
		}
	}
	if len(o.strategies) == 0 {
		return bad("-strategies: no strategy given")
	}
	if o.duration <= 0 || o.duration > maxDuration {
		return bad("-duration %v must be positive and at most %v", o.duration, maxDuration)
	}
	if o.pick < 1 || o.pick > 10_000 {
		return bad("-pick %d must be between 1 and 10000", o.pick)
	}
	if !isFormat(o.format) {
		return bad("-format %q: want one of %s", o.format, strings.Join(report.Formats, ", "))
	}
	return o, nil
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
	conn, err := openRedis(ctx, o.redis, stderr)
	if err != nil {
		return err
	}
	defer conn.Close()
	sw := report.Sweep{
		Env:          conn.Env(),
		Scenario:     o.scenario.String(),
		DurationS:    o.duration.Seconds(),
		Illustrative: conn.Illustrative(),
		Seed:         o.seed,
		Pick:         o.pick,
		Points:       []report.Point{},
	}
	var hooks []redis.Hook
	if conn.Mode == redisconn.ModeMiniredis {
		hooks = append(hooks, redisconn.MiniWatchHook{})
	}
	runID := uuid.NewString()[:8]
	total := len(o.rtts) * len(o.clients) * len(o.strategies)
	prog := newProgress(stderr, total)
	fmt.Fprintf(stderr, "simulate window: %d cells of %v each (about %v)\n", total, o.duration, time.Duration(total)*o.duration)
	runErr := sweep(ctx, o, conn, hooks, runID, prog, &sw)
	if sw.Interrupted {
		fmt.Fprintf(stderr, "simulate window: interrupted; reporting the %d of %d cells measured\n", len(sw.Points), total)
	}
	if len(sw.Points) > 0 {
		if err := writeSweep(o, sw, stdout, stderr); err != nil {
			return err
		}
	}
	switch {
	case runErr != nil:
		return runErr
	case sw.Violations() > 0:
		return fmt.Errorf("%w: %d in all", errViolations, sw.Violations())
	case sw.Interrupted:
		return fmt.Errorf("interrupted after %d of %d cells", len(sw.Points), total)
	}
	return nil
}

// sweep runs every cell of the sweep, one round trip at a time, into sw.
func sweep(ctx context.Context, o windowOptions, conn *redisconn.Conn, hooks []redis.Hook, runID string, prog *progress, sw *report.Sweep) error {
	for _, rtt := range o.rtts {
		ln, err := openLink(ctx, conn, netdelay.Config{RTT: rtt})
		if err != nil {
			return err
		}
		err = sweepLink(ctx, o, ln, hooks, runID, prog, sw)
		ln.Close()
		if err != nil || sw.Interrupted {
			return err
		}
	}
	return nil
}

// sweepLink runs the cells of one round trip.
func sweepLink(ctx context.Context, o windowOptions, ln *link, hooks []redis.Hook, runID string, prog *progress, sw *report.Sweep) error {
	sc := o.scenario
	for _, form := range o.clients {
		for _, st := range o.strategies {
			if ctx.Err() != nil {
				sw.Interrupted = true
				return nil
			}
			if err := ln.measure(ctx); err != nil {
				return err
			}
			prog.startLabel(fmt.Sprintf("rtt %-6v %-4s %-6s", ln.delay.RTT, form, st))
			client := redisconn.SizedClient(ln.client, sc.Listers+sc.Buyers+4, hooks...)
			res, err := sim.Run(ctx, sim.Config{
				Client: client, Scenario: sc, Strategy: st, Duration: o.duration,
				Seed: o.seed, Pick: o.pick,
				Name:          fmt.Sprintf("win-%s-%d-%s-%s", runID, ln.delay.RTT.Microseconds(), form, st),
				Progress:      prog.update,
				MarketOptions: bookform.Options(client, form),
			})
			if client != ln.client {
				client.Close()
			}
			if err != nil {
				prog.fail(err)
				return fmt.Errorf("cell rtt %v %s %s: %w", ln.delay.RTT, form, st, err)
			}
			row := report.FromResult(res)
			sw.Points = append(sw.Points, report.Point{Client: string(form),
				RTTConfiguredMs: latency.Milliseconds(ln.delay.RTT), RTTMs: latency.Milliseconds(ln.measured), Row: row})
			prog.done(row)
			if res.Interrupted {
				sw.Interrupted = true
				return nil
			}
		}
	}
	return nil
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
	fmt.Fprintf(stderr, "simulate window: wrote %s into %s\n", strings.Join(files, ", "), o.out)
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
