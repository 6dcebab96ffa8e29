package netdelay_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/netdelay"
	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// benchClient returns a client of srv with a pool of poolSize connections,
// direct when proxy is false, else through a proxy adding rtt.
func benchClient(b *testing.B, srv *redistest.Backend, proxy bool, rtt time.Duration, poolSize int) *redis.Client {
	addr := srv.Addr()
	if proxy {
		p, err := netdelay.Start(context.Background(), addr, rtt)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		addr = p.Addr()
	}
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize})
	b.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	return c
}

// benchTargets runs bench against a real redis-server directly and through
// a proxy adding each of rtts. Beside ns/op it reports the median time of
// an operation (p50-ns) and the CPU time of this process per operation
// (client plus proxy) as cpu-ns/op: the difference between "direct" and
// "rtt=0s" is what the proxy's relaying costs, the difference between
// "rtt=0s" and a delay what its timers cost.
func benchTargets(b *testing.B, rtts []time.Duration, bench func(b *testing.B, c *redis.Client)) {
	srv := redistest.Real(b)
	names := []string{"direct"}
	for _, rtt := range rtts {
		names = append(names, "rtt="+rtt.String())
	}
	for i, name := range names {
		b.Run(name, func(b *testing.B) {
			var rtt time.Duration
			if i > 0 {
				rtt = rtts[i-1]
			}
			c := benchClient(b, srv, i > 0, rtt, 1)
			var times latency.Histogram
			cpu := probe.ProcessCPU()
			for b.Loop() {
				start := time.Now()
				bench(b, c)
				times.Record(time.Since(start))
			}
			b.ReportMetric(float64(probe.ProcessCPU()-cpu)/float64(times.Count()), "cpu-ns/op")
			b.ReportMetric(float64(times.Quantile(0.5)), "p50-ns")
		})
	}
}

// BenchmarkPing is one PING per operation, at the delays a simulator
// sweep uses and below.
func BenchmarkPing(b *testing.B) {
	ctx := context.Background()
	rtts := []time.Duration{0, 250 * time.Microsecond, 500 * time.Microsecond,
		time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}
	benchTargets(b, rtts, func(b *testing.B, c *redis.Client) {
		if err := c.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkPipeline is a pipeline of 100 SETs per operation.
func BenchmarkPipeline(b *testing.B) {
	ctx := context.Background()
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = "bench:" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	benchTargets(b, []time.Duration{0, time.Millisecond}, func(b *testing.B, c *redis.Client) {
		pipe := c.Pipeline()
		for _, k := range keys {
			pipe.Set(ctx, k, "value-of-some-length", 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkPingParallel is PINGs from 16 goroutines with a connection each,
// as a simulator cell sends them: the proxy's CPU per round trip when it
// is kept busy rather than woken for every single one.
func BenchmarkPingParallel(b *testing.B) {
	const clients = 16
	srv := redistest.Real(b)
	ctx := context.Background()
	targets := []struct {
		name  string
		proxy bool
		rtt   time.Duration
	}{{"direct", false, 0}, {"rtt=0s", true, 0}, {"rtt=1ms", true, time.Millisecond}}
	for _, tt := range targets {
		b.Run(tt.name, func(b *testing.B) {
			c := benchClient(b, srv, tt.proxy, tt.rtt, clients)
			b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			cpu := probe.ProcessCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.Ping(ctx).Err(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(probe.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
