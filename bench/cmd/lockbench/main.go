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
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/bench/lockbench"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/report/output"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		duration   = flag.Duration("duration", 10*time.Second, "time of each config in each contended cell (one key)")
		clients    = flag.String("clients", "1,2,5,10", "goroutine counts sharing one key (contended cells)")
		uDuration  = flag.Duration("uncontended-duration", 3*time.Second, "time of each config in each uncontended cell")
		uClients   = flag.String("uncontended", "1,16", "goroutine counts of the uncontended cells, each goroutine on its own key")
		rounds     = flag.Int("rounds", 2, "slices each config's time in a cell is split into, interleaved with the other configs")
		configs    = flag.String("configs", "", "comma-separated configs to run (default all): "+configNames())
		ttl        = flag.Duration("ttl", 10*time.Second, "lease of every hold")
		format     = flag.String("format", "table", "output: table, markdown or json")
		wide       = flag.Bool("wide", false, "table: every column (wider than 100 columns)")
		ceilingN   = flag.Int("ceiling-requests", 100000, "requests per redis-benchmark run (0 skips the ceiling)")
		cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the lock measurements to this file")
		jsonOut    = flag.String("json", "", "also write the report as JSON to this file")
	)
	flag.Parse()
	if *format != "table" && *format != "markdown" && *format != "json" {
		return fmt.Errorf("unknown -format %q (want table, markdown or json)", *format)
	}
	contended, err := parseInts(*clients)
	if err != nil {
		return fmt.Errorf("-clients: %w", err)
	}
	uncontended, err := parseInts(*uClients)
	if err != nil {
		return fmt.Errorf("-uncontended: %w", err)
	}
	var names []string
	if *configs != "" {
		names = strings.Split(*configs, ",")
	}
	cfgs, err := lockbench.SelectConfigs(names)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv, err := redisserver.Start(ctx, redisserver.Options{})
	if err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	defer srv.Stop()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	fmt.Fprintf(os.Stderr, "lockbench: private redis-server on %s\n", srv.Addr())

	rep := &lockbench.Report{
		Command: strings.Join(os.Args, " "),
		Configs: cfgs,
		Env:     output.NewEnv(redisconn.ModeRedisServer, redisserver.Version(ctx, admin)),
	}
	r := &lockbench.Runner{Addr: srv.Addr(), TTL: *ttl, Admin: admin}
	defer r.Close()
	opts := lockbench.Options{
		Configs:               cfgs,
		UncontendedGoroutines: uncontended, UncontendedDuration: *uDuration,
		ContendedGoroutines: contended, ContendedDuration: *duration,
		Rounds: *rounds, Progress: os.Stderr,
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	rep.Results, err = r.RunAll(ctx, opts)
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	if *ceilingN > 0 {
		counts := union(uncontended, contended)
		fmt.Fprintf(os.Stderr, "lockbench: ceiling with redis-benchmark at %v clients\n", counts)
		rep.Ceilings, err = lockbench.MeasureCeiling(ctx, "127.0.0.1", srv.Port(), counts, *ceilingN)
		if errors.Is(err, lockbench.ErrNoRedisBenchmark) {
			fmt.Fprintln(os.Stderr, "lockbench: redis-benchmark not on PATH; ceiling skipped")
		} else if err != nil {
			return err
		}
	}
	rep.Build()
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			return err
		}
		if err := rep.WriteJSON(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	switch *format {
	case "json":
		return rep.WriteJSON(os.Stdout)
	case "markdown":
		return rep.WriteMarkdown(os.Stdout)
	default:
		return rep.WriteText(os.Stdout, *wide)
	}
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
