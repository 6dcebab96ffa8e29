// Command queuestats runs the one-key acquire+release loop of lockbench
// with queue.Mutex (package locking/queue) on a private redis-server and
// prints what the server spent per acquisition: CPU and, from INFO
// commandstats, the calls and microseconds of every command (the scripts'
// inner commands are counted both on their own and inside EVALSHA). It
// shows where the server's time goes in a hand-over.
//
//	queuestats -goroutines 10 -duration 5s
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/bench/internal/cli"
	"github.com/lockmarket/lockmarket/bench/lockbench"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/locking/queue"
)

func main() { cli.Main("queuestats", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("queuestats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	goroutines := fs.Int("goroutines", 10, "goroutines sharing one key")
	duration := fs.Duration("duration", 5*time.Second, "length of the measurement")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *goroutines < 1 || *duration <= 0 {
		return cli.Usagef("-goroutines %d -duration %v: want 1 or more, and a positive duration", *goroutines, *duration)
	}
	srv, err := redisserver.Start(ctx, redisserver.Options{})
	if err != nil {
		return err
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64})
	defer rdb.Close()
	m := queue.NewMutex(rdb, "queuestats", 10*time.Second)
	// Warm up: load the scripts and fill the pool.
	if err := loop(ctx, m, *goroutines, 500*time.Millisecond, new(atomic.Int64)); err != nil {
		return err
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		return err
	}
	cpu0, _, err := lockbench.ServerStats(ctx, rdb)
	if err != nil {
		return err
	}
	var n atomic.Int64
	start := time.Now()
	if err := loop(ctx, m, *goroutines, *duration, &n); err != nil {
		return err
	}
	elapsed := time.Since(start)
	cpu1, _, err := lockbench.ServerStats(ctx, rdb)
	if err != nil {
		return err
	}
	acq := float64(n.Load())
	fmt.Fprintf(stdout, "goroutines %d, %.0f acquisitions/s, redis-server CPU %.0f%% of a core, %.1f µs per acquisition\n",
		*goroutines, acq/elapsed.Seconds(), 100*(cpu1-cpu0)/elapsed.Seconds(), 1e6*(cpu1-cpu0)/acq)
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return err
	}
	writeCommandStats(stdout, info, acq)
	return nil
}

// writeCommandStats writes, from INFO commandstats, each command's calls
// and microseconds per acquisition (acq acquisitions).
func writeCommandStats(w io.Writer, info string, acq float64) {
	fmt.Fprintf(w, "%-12s %14s %16s %14s\n", "command", "calls/acq", "µs per call", "µs per acq")
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || strings.Contains(name, "config") || strings.Contains(name, "info") {
			continue
		}
		f := map[string]float64{}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f[k], _ = strconv.ParseFloat(v, 64)
		}
		fmt.Fprintf(w, "%-12s %14.2f %16.2f %14.2f\n", strings.TrimPrefix(name, "cmdstat_"), f["calls"]/acq, f["usec_per_call"], f["usec"]/acq)
	}
}

// loop has g goroutines acquire and release m for d, counting in n.
func loop(ctx context.Context, m *queue.Mutex, g int, d time.Duration, n *atomic.Int64) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for range g {
		wg.Go(func() {
			for ctx.Err() == nil {
				l, err := m.Acquire(ctx)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
						return
					}
					continue
				}
				if err := l.Release(context.WithoutCancel(ctx)); err != nil {
					errs <- err
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
