package targets_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/redis/go-redis/v9"
)

// BenchmarkWorkers searches two targets exhaustively with 1, 2 and 4
// workers and reports the complete schedules run per second: the watchdog
// (pauses shorter than the lease, crashes), whose schedules are light,
// and the fenced fine market with two buyers, whose schedules set up and
// audit a market. It logs the redis-server's busiest commands (INFO
// commandstats) for each run: the server is one thread that every worker
// shares.
func BenchmarkWorkers(b *testing.B) {
	srv := redistest.Real(b)
	ctx := context.Background()
	watchdog := action.DefaultModel()
	watchdog.FaultKinds = []action.Fault{action.FaultPauseShort, action.FaultCrash}
	fine := action.DefaultModel()
	fine.Clients = 2
	tgs := []struct {
		name string
		make func() (*sched.Target, error)
		m    action.Model
	}{
		{
			"watchdog",
			func() (*sched.Target, error) { return targets.Watchdog(false), nil },
			watchdog,
		},
		{
			"fine-fenced",
			func() (*sched.Target, error) { return targets.Strategy(market.Fine, true) },
			fine,
		},
	}
	for _, tc := range tgs {
		for _, workers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/workers=%d", tc.name, workers), func(b *testing.B) {
				for range b.N {
					tg, err := tc.make()
					if err != nil {
						b.Fatal(err)
					}
					e, err := sched.NewExplorer(ctx, srv.Client, tg, tc.m)
					if err != nil {
						b.Fatal(err)
					}
					srv.Client.ConfigResetStat(ctx)
					start := time.Now()
					res, err := e.Explore(ctx, sched.Options{Workers: workers})
					el := time.Since(start)
					e.Close()
					if err != nil {
						b.Fatal(err)
					}
					// Both targets are correct within these bounds: a violation
					// here is a false alarm of a loaded machine. It is logged,
					// not fatal: this measures the rate (the tests check the
					// verdicts).
					for _, v := range res.Violations {
						b.Logf(
							"%s, %d workers: %s reported: %s", tg.Name, workers, v.Property,
							v.Message,
						)
					}
					if !res.Exhaustive {
						b.Logf("%s, %d workers: not exhaustive", tg.Name, workers)
					}
					b.ReportMetric(float64(res.Schedules), "schedules")
					b.ReportMetric(float64(res.Schedules)/el.Seconds(), "schedules/s")
					b.Logf(
						"%s, %d workers: %d schedules (+%d pruned) in %.2f s; server: %s", tg.Name,
						workers, res.Schedules, res.Pruned, el.Seconds(),
						busiest(ctx, srv.Client, el),
					)
				}
			})
		}
	}
}

// busiest is the server's share of the elapsed time el spent in commands,
// and the three commands that took most of it, from INFO commandstats.
func busiest(ctx context.Context, rdb *redis.Client, el time.Duration) string {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return err.Error()
	}
	type stat struct {
		name  string
		calls int64
		usec  int64
	}
	var stats []stat
	var total int64
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		s := stat{name: strings.TrimPrefix(name, "cmdstat_")}
		for kv := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				s.calls = n
			case "usec":
				s.usec = n
			}
		}
		total += s.usec
		stats = append(stats, s)
	}
	for i := range stats {
		for j := i + 1; j < len(stats); j++ {
			if stats[j].usec > stats[i].usec {
				stats[i], stats[j] = stats[j], stats[i]
			}
		}
	}
	out := fmt.Sprintf("busy %.0f%% of the run", 100*float64(total)/float64(el.Microseconds()))
	for _, s := range stats[:min(3, len(stats))] {
		out += fmt.Sprintf(
			"; %s %d calls %.1f µs each",
			s.name, s.calls, float64(s.usec)/float64(max(s.calls, 1)),
		)
	}
	return out
}
