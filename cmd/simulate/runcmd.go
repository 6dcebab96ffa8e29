package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
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
	fs := flag.NewFlagSet("simulate run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o runOptions
	var strategies, scenarios, client string
	fs.StringVar(&o.redis, "redis", "auto", "Redis: auto (REDIS_URL, else a private redis-server from PATH, else embedded miniredis), a redis:// URL, or host:port[,host:port...] of a cluster")
	fs.StringVar(&strategies, "strategies", "watch,coarse,fine,lua", "comma-separated strategies: watch, coarse, fine, lua")
	fs.StringVar(&scenarios, "scenarios", "1x1,5x1,5x5", fmt.Sprintf("comma-separated LISTERSxBUYERS scenarios, each count 1..%d", sim.MaxWorkers))
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "how long each cell runs (the book ran 60s)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the workers' random prices and choices")
	fs.IntVar(&o.pick, "pick", sim.DefaultPick, "a buyer buys one of the K cheapest listings, chosen at random")
	fs.StringVar(&o.format, "format", "table", "output: "+strings.Join(report.Formats, ", "))
	fs.BoolVar(&o.wide, "wide", false, "table: every column, the book's figures in parentheses (wider than 100 columns)")
	fs.IntVar(&o.markets, "markets", 1, fmt.Sprintf("run this many independent markets at once in each cell (1..%d), each with the scenario's listers and buyers; on a cluster their hash tags go to the masters in turn", sim.MaxMarkets))
	fs.IntVar(&o.prefill, "prefill", 0, fmt.Sprintf("fill each market with this many listings (priced above the listers' range) before the workers start, and report Redis memory per listing (0..%d)", sim.MaxPrefill))
	fs.StringVar(&o.out, "out", "", "also write results.md, results.csv, results.json and SVG charts into this directory")
	addLinkFlags(fs, &client, &o.rtt, &o.jitter, &o.profile)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), runUsage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), runExample)
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return o, err
	}
	bad := func(format string, a ...any) (runOptions, error) {
		return o, usagef(stderr, fs.Name(), format, a...)
	}
	var err error
	if o.client, o.rtt, o.jitter, err = resolveLinkFlags(fs, client, o.rtt, o.jitter, o.profile); err != nil {
		return bad("%v", err)
	}
	seen := map[market.Strategy]bool{}
	for name := range strings.SplitSeq(strategies, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		st, err := market.ParseStrategy(name)
		if err != nil {
			return bad("-strategies: unknown strategy %q (want watch, coarse, fine or lua)", name)
		}
		if !seen[st] {
			seen[st] = true
			o.strategies = append(o.strategies, st)
		}
	}
	if len(o.strategies) == 0 {
		return bad("-strategies: no strategy given")
	}
	if o.scenarios, err = sim.ParseScenarios(scenarios); err != nil {
		return bad("-scenarios: %v", err)
	}
	if o.duration <= 0 || o.duration > maxDuration {
		return bad("-duration %v must be positive and at most %v", o.duration, maxDuration)
	}
	if o.pick < 1 || o.pick > 10_000 {
		return bad("-pick %d must be between 1 and 10000", o.pick)
	}
	if o.markets < 1 || o.markets > sim.MaxMarkets {
		return bad("-markets %d must be between 1 and %d", o.markets, sim.MaxMarkets)
	}
	if o.prefill < 0 || o.prefill > sim.MaxPrefill {
		return bad("-prefill %d must be between 0 and %d", o.prefill, sim.MaxPrefill)
	}
	if !isFormat(o.format) {
		return bad("-format %q: want one of %s", o.format, strings.Join(report.Formats, ", "))
	}
	return o, nil
}

func isFormat(f string) bool {
	for _, k := range report.Formats {
		if f == k {
			return true
		}
	}
	return false
}

// runSim is "simulate run": every scenario under every strategy, one cell
// at a time, then the report.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	conn, err := openRedis(ctx, o.redis, stderr)
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
	var hooks []redis.Hook
	if conn.Mode == redisconn.ModeMiniredis {
		hooks = append(hooks, redisconn.MiniWatchHook{})
	}
	runID := uuid.NewString()[:8]
	total := len(o.scenarios) * len(o.strategies)
	prog := newProgress(stderr, total)
	fmt.Fprintf(stderr, "simulate: %d cells of %v each (about %v); %s\n", total, o.duration, time.Duration(total)*o.duration,
		report.LinkText(doc))
	var runErr error
cells:
	for _, sc := range o.scenarios {
		for _, st := range o.strategies {
			if ctx.Err() != nil {
				doc.Interrupted = true
				break cells
			}
			if o.prefill > 0 {
				// Start each cell's RSS figure from what it needs, not
				// from the previous cell's leftovers.
				debug.FreeOSMemory()
			}
			client := redisconn.SizedClient(ln.client, o.markets*(sc.Listers+sc.Buyers)+4, hooks...)
			prog.start(sc, st)
			res, err := sim.Run(ctx, sim.Config{
				Client: client, Scenario: sc, Strategy: st, Duration: o.duration,
				Seed: o.seed, Pick: o.pick,
				Name:     fmt.Sprintf("sim-%s-%s-%s", runID, sc, st),
				Progress: prog.update, PrefillProgress: prog.prefill,
				Markets: o.markets, Prefill: o.prefill,
				MarketOptions: bookform.Options(client, o.client),
			})
			if client != ln.client {
				client.Close()
			}
			if err != nil {
				prog.fail(err)
				runErr = fmt.Errorf("cell %s %s: %w", sc, st, err)
				break cells
			}
			row := report.FromResult(res)
			doc.Rows = append(doc.Rows, row)
			prog.done(row)
			if res.Interrupted {
				doc.Interrupted = true
				break cells
			}
		}
	}
	if doc.Interrupted {
		fmt.Fprintf(stderr, "simulate: interrupted; reporting the %d of %d cells measured\n", len(doc.Rows), total)
	}
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
	case doc.Interrupted:
		return fmt.Errorf("interrupted after %d of %d cells", len(doc.Rows), total)
	}
	return nil
}

// progress reports each cell on stderr: a live counter on a terminal,
// one plain line per cell otherwise.
type progress struct {
	w        io.Writer
	terminal bool
	total, n int
	label    string
	began    time.Time
	// prefillLast is when the last plain prefill line was printed.
	prefillLast time.Time
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb" {
			p.terminal = true
		}
	}
	return p
}

func (p *progress) start(sc sim.Scenario, st market.Strategy) {
	p.startLabel(fmt.Sprintf("%-6s %-6s", sc, st))
}

// startLabel starts the next cell, named by label.
func (p *progress) startLabel(label string) {
	p.n++
	p.label = fmt.Sprintf("[%d/%d] %s", p.n, p.total, label)
	p.began, p.prefillLast = time.Now(), time.Time{}
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s starting", p.label)
		return
	}
	// Plain output: the label now, the figures when the cell is done, so a
	// log shows which cell is running.
	fmt.Fprint(p.w, p.label+" ")
}

// update is called from the cell's progress goroutine.
func (p *progress) update(c sim.Counters) {
	if !p.terminal {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s %5.1fs  listed %s  bought %s  failed %s  retries %s",
		p.label, c.Elapsed.Seconds(), report.Thousands(c.Listed), report.Thousands(c.Bought),
		report.Thousands(c.Failed), report.Thousands(c.Retries))
}

func (p *progress) done(r report.Row) {
	if p.terminal {
		fmt.Fprint(p.w, "\r\033[K"+p.label+" ")
	}
	audit := "audit ok"
	if r.Violations > 0 {
		audit = fmt.Sprintf("AUDIT: %d violations", r.Violations)
	}
	note := ""
	if r.Interrupted {
		note = " (interrupted)"
	}
	if r.Error != "" {
		note += " first error: " + r.Error
	}
	fmt.Fprintf(p.w, "listed %s  bought %s  failed %s  retries %s  %.0f ops/s  %s  (%.1fs)%s\n",
		report.Thousands(r.Listed), report.Thousands(r.Bought), report.Thousands(r.FailedPurchases),
		report.Thousands(r.Retries), r.OpsPerS, audit, time.Since(p.began).Seconds(), note)
}

func (p *progress) fail(err error) {
	if p.terminal {
		fmt.Fprint(p.w, "\r\033[K"+p.label+" ")
	}
	fmt.Fprintf(p.w, "failed: %v\n", err)
}
