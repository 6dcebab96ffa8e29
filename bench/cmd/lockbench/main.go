// Command lockbench compares package locking with redsync and redislock
// on one private redis-server, and measures that server's ceiling with
// redis-benchmark, in one run. It prints one table with ratios ours/peer.
//
//	lockbench -duration 10s -clients 1,2,5,10 -format markdown
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/bench/internal/cli"
	"github.com/lockmarket/lockmarket/bench/lockbench"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/report/output"
)

func main() { cli.Main("lockbench", run) }

// options are lockbench's flags, read.
type options struct {
	duration, uDuration, ttl time.Duration
	contended, uncontended   []int // goroutine counts of the cells
	rounds, ceilingN         int
	configs                  []lockbench.Config
	format                   string
	wide                     bool
	cpuProfile, jsonOut      string
}

// parseFlags reads lockbench's flags; a mistake is a cli usage error.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("lockbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "time of each config in each contended cell (one key)")
	clients := fs.String("clients", "1,2,5,10", "goroutine counts sharing one key (contended cells)")
	fs.DurationVar(&o.uDuration, "uncontended-duration", 3*time.Second, "time of each config in each uncontended cell")
	uClients := fs.String("uncontended", "1,16", "goroutine counts of the uncontended cells, each goroutine on its own key")
	fs.IntVar(&o.rounds, "rounds", 2, "slices each config's time in a cell is split into, interleaved with the other configs")
	configs := fs.String("configs", "", "comma-separated configs to run (default all): "+configNames())
	fs.DurationVar(&o.ttl, "ttl", 10*time.Second, "lease of every hold")
	fs.StringVar(&o.format, "format", "table", "output: table, markdown or json")
	fs.BoolVar(&o.wide, "wide", false, "table: every column (wider than 100 columns)")
	fs.IntVar(&o.ceilingN, "ceiling-requests", 100000, "requests per redis-benchmark run (0 skips the ceiling)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the lock measurements to this file")
	fs.StringVar(&o.jsonOut, "json", "", "also write the report as JSON to this file")
	if err := cli.Parse(fs, args); err != nil {
		return o, err
	}
	if o.format != "table" && o.format != "markdown" && o.format != "json" {
		return o, cli.Usagef("unknown -format %q (want table, markdown or json)", o.format)
	}
	var err error
	if o.contended, err = parseInts(*clients); err != nil {
		return o, cli.Usagef("-clients: %v", err)
	}
	if o.uncontended, err = parseInts(*uClients); err != nil {
		return o, cli.Usagef("-uncontended: %v", err)
	}
	var names []string
	if *configs != "" {
		names = strings.Split(*configs, ",")
	}
	if o.configs, err = lockbench.SelectConfigs(names); err != nil {
		return o, cli.Usagef("-configs %q: want some of %s", *configs, configNames())
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	srv, err := redisserver.Start(ctx, redisserver.Options{})
	if err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	defer srv.Stop()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	fmt.Fprintf(stderr, "lockbench: private redis-server on %s\n", srv.Addr())

	rep := &lockbench.Report{
		Command: strings.Join(append([]string{"lockbench"}, args...), " "),
		Configs: o.configs,
		Env:     output.NewEnv(redisconn.ModeRedisServer, redisserver.Version(ctx, admin)),
	}
	r := &lockbench.Runner{Addr: srv.Addr(), TTL: o.ttl, Admin: admin}
	defer r.Close()
	if rep.Results, err = measure(ctx, r, o, stderr); err != nil {
		return err
	}
	if o.ceilingN > 0 {
		counts := union(o.uncontended, o.contended)
		fmt.Fprintf(stderr, "lockbench: ceiling with redis-benchmark at %v clients\n", counts)
		rep.Ceilings, err = lockbench.MeasureCeiling(ctx, "127.0.0.1", srv.Port(), counts, o.ceilingN)
		if errors.Is(err, lockbench.ErrNoRedisBenchmark) {
			fmt.Fprintln(stderr, "lockbench: redis-benchmark not on PATH; ceiling skipped")
		} else if err != nil {
			return err
		}
	}
	rep.Build()
	if o.jsonOut != "" {
		if err := writeJSONFile(o.jsonOut, rep); err != nil {
			return err
		}
	}
	switch o.format {
	case "json":
		return rep.WriteJSON(stdout)
	case "markdown":
		return rep.WriteMarkdown(stdout)
	default:
		return rep.WriteText(stdout, o.wide)
	}
}

// measure runs every config's cells, under a CPU profile with
// -cpuprofile.
func measure(ctx context.Context, r *lockbench.Runner, o options, progress io.Writer) ([]*lockbench.Result, error) {
	opts := lockbench.Options{
		Configs:               o.configs,
		UncontendedGoroutines: o.uncontended, UncontendedDuration: o.uDuration,
		ContendedGoroutines: o.contended, ContendedDuration: o.duration,
		Rounds: o.rounds, Progress: progress,
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	return r.RunAll(ctx, opts)
}

// writeJSONFile writes rep as JSON into the file called name.
func writeJSONFile(name string, rep *lockbench.Report) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func configNames() string {
	var n []string
	for _, c := range lockbench.Configs() {
		n = append(n, c.Name)
	}
	return strings.Join(n, ",")
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// union returns the distinct values of a and b, ascending.
func union(a, b []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, v := range append(append([]int{}, a...), b...) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}
