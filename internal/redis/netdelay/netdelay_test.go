package netdelay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/netdelay"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// startProxy starts a proxy to addr, closed when the test ends.
func startProxy(t *testing.T, addr string, rtt time.Duration) *netdelay.Proxy {
	t.Helper()
	p, err := netdelay.Start(context.Background(), addr, rtt)
	if err != nil {
		t.Fatalf("start proxy: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// client returns a go-redis client of the proxy, closed when the test ends.
func client(t *testing.T, p *netdelay.Proxy, poolSize int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), PoolSize: poolSize})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCommandsPassUnchanged runs pipelines, large values and concurrent
// clients through the proxy, with and without delay, and checks every reply.
func TestCommandsPassUnchanged(t *testing.T) {
	t.Parallel() // servers of its own
	for _, rtt := range []time.Duration{0, time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				p := startProxy(t, b.Addr(), rtt)
				c := client(t, p, 8)

				t.Run("pipeline", func(t *testing.T) {
					const n = 2000
					pipe := c.Pipeline()
					sets := make([]*redis.StatusCmd, n)
					incrs := make([]*redis.IntCmd, n)
					for i := range n {
						sets[i] = pipe.Set(ctx, fmt.Sprintf("k:%d", i), fmt.Sprintf("v%d", i), 0)
						incrs[i] = pipe.Incr(ctx, "counter")
					}
					if _, err := pipe.Exec(ctx); err != nil {
						t.Fatalf("pipeline: %v", err)
					}
					for i := range n {
						if err := sets[i].Err(); err != nil {
							t.Fatalf("SET %d: %v", i, err)
						}
						if got := incrs[i].Val(); got != int64(i+1) {
							t.Fatalf("INCR %d = %d, want %d (replies out of order)", i, got, i+1)
						}
					}
					keys := make([]string, n)
					for i := range keys {
						keys[i] = fmt.Sprintf("k:%d", i)
					}
					vals, err := c.MGet(ctx, keys...).Result()
					if err != nil {
						t.Fatalf("MGET: %v", err)
					}
					for i, v := range vals {
						if v != fmt.Sprintf("v%d", i) {
							t.Fatalf("k:%d = %v, want v%d", i, v, i)
						}
					}
				})

				t.Run("large value", func(t *testing.T) {
					big := make([]byte, 8<<20)
					r := rand.NewChaCha8([32]byte{1})
					r.Read(big)
					if err := c.Set(ctx, "big", big, 0).Err(); err != nil {
						t.Fatalf("SET big: %v", err)
					}
					got, err := c.Get(ctx, "big").Bytes()
					if err != nil {
						t.Fatalf("GET big: %v", err)
					}
					if !bytes.Equal(got, big) {
						t.Fatalf("GET big: %d bytes differ from the %d sent", len(got), len(big))
					}
				})

				t.Run("concurrent clients", func(t *testing.T) {
					const workers, ops = 8, 100
					var wg sync.WaitGroup
					errs := make(chan error, workers)
					for w := range workers {
						wg.Go(func() {
							for i := range ops {
								key := fmt.Sprintf("w%d", w)
								got, err := c.RPush(ctx, key, i).Result()
								if err != nil {
									errs <- err
									return
								}
								if got != int64(i+1) {
									errs <- fmt.Errorf("RPUSH %s #%d: length %d", key, i, got)
									return
								}
							}
						})
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						t.Fatal(err)
					}
					for w := range workers {
						got, err := c.LRange(ctx, fmt.Sprintf("w%d", w), 0, -1).Result()
						if err != nil {
							t.Fatalf("LRANGE: %v", err)
						}
						for i, v := range got {
							if v != fmt.Sprint(i) {
								t.Fatalf("w%d[%d] = %s", w, i, v)
							}
						}
					}
				})
			})
		})
	}
}

// echoServer accepts connections on loopback and sends back every byte it
// receives, half-closing when its peer does. It stops with the test.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				io.Copy(c, c)
				c.(*net.TCPConn).CloseWrite()
			})
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// TestByteStream sends random bytes in random-sized writes while reading
// them back, then half-closes: every byte returns, in order, followed by
// the end of the stream.
func TestByteStream(t *testing.T) {
	addr := echoServer(t)
	for _, cfg := range []netdelay.Config{{}, {RTT: 2 * time.Millisecond}, {RTT: time.Millisecond, Jitter: time.Millisecond, Seed: 1}} {
		t.Run(cfg.String(), func(t *testing.T) {
			p, err := netdelay.StartConfig(context.Background(), addr, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := rand.New(rand.NewPCG(1, 2))
			sent := make([]byte, 3<<20)
			for i := range sent {
				sent[i] = byte(r.Uint32())
			}
			var wg sync.WaitGroup
			var werr error
			wg.Go(func() {
				for rest := sent; len(rest) > 0; {
					n := min(1+r.IntN(100_000), len(rest))
					if _, werr = c.Write(rest[:n]); werr != nil {
						return
					}
					rest = rest[n:]
				}
				werr = c.(*net.TCPConn).CloseWrite()
			})
			got, err := io.ReadAll(c)
			wg.Wait()
			if werr != nil {
				t.Fatalf("write: %v", werr)
			}
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if !bytes.Equal(got, sent) {
				t.Fatalf("got %d bytes back, want the %d sent, unchanged", len(got), len(sent))
			}
		})
	}
}

// proxyStacks returns the stacks of goroutines running proxy code.
func proxyStacks() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "netdelay.(*") {
			out = append(out, g)
		}
	}
	return out
}

// TestCloseStopsEverything closes a proxy while clients are sending through
// it: Close returns only when no goroutine of the proxy is left, clients
// get errors, new connections are refused, and once the clients are closed
// too the process is back to the goroutines it had before.
func TestCloseStopsEverything(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	before := runtime.NumGoroutine()

	p, err := netdelay.Start(ctx, b.Addr(), 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	clients := make([]*redis.Client, 4)
	var wg sync.WaitGroup
	started := make(chan struct{}, len(clients))
	for i := range clients {
		clients[i] = redis.NewClient(&redis.Options{Addr: p.Addr(), PoolSize: 4, MaxRetries: -1})
		c := clients[i]
		wg.Go(func() {
			for n := 0; ; n++ {
				pipe := c.Pipeline()
				for j := range 50 {
					pipe.Set(ctx, fmt.Sprintf("c%d", j), n, 0)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					return
				}
				if n == 0 {
					started <- struct{}{}
				}
			}
		})
	}
	for range clients {
		<-started
	}
	if len(proxyStacks()) == 0 {
		t.Fatal("no proxy goroutine while clients are connected")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if left := proxyStacks(); len(left) > 0 {
		t.Fatalf("%d proxy goroutines left after Close, e.g.:\n%s", len(left), left[0])
	}
	wg.Wait() // every client loop has seen an error
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		c.Close()
		t.Fatal("the closed proxy still accepts connections")
	}
	if err := clients[0].Ping(ctx).Err(); err == nil {
		t.Fatal("PING through a closed proxy succeeded")
	}
	for _, c := range clients {
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before the proxy started", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStartRefuses checks Start's and MeasureRTT's errors.
func TestStartRefuses(t *testing.T) {
	ctx := context.Background()
	b := redistest.Mini(t)
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		upstream string
		rtt      time.Duration
		want     error
	}{
		{"negative rtt", b.Addr(), -time.Millisecond, netdelay.ErrNegativeRTT},
		{"nothing listening", fmt.Sprintf("127.0.0.1:%d", port), 0, nil},
		{"bad address", "no-port", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := netdelay.Start(ctx, tt.upstream, tt.rtt)
			if err == nil {
				p.Close()
				t.Fatal("Start succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("no samples", func(t *testing.T) {
		if _, err := netdelay.MeasureRTT(ctx, b.Client, 0); !errors.Is(err, netdelay.ErrNoSamples) {
			t.Fatalf("err = %v, want %v", err, netdelay.ErrNoSamples)
		}
	})
	t.Run("closed proxy", func(t *testing.T) {
		p := startProxy(t, b.Addr(), 0)
		c := client(t, p, 1)
		if _, err := netdelay.MeasureRTT(ctx, c, 3); err != nil {
			t.Fatalf("measure: %v", err)
		}
		p.Close()
		if _, err := netdelay.MeasureRTT(ctx, c, 3); err == nil {
			t.Fatal("measured a round trip through a closed proxy")
		}
	})
}

// TestAddsConfiguredDelay pings through a delaying proxy and through a
// proxy without delay, on the same server, in turns so that both see the
// same load. A busy machine only lengthens a round trip, so the checks
// hold at any load: every round trip through the delaying proxy lasts at
// least the delay, and a pipeline of 100 commands pays it once, not once
// per command: its median is within 20 times the single PING's, measured
// in the same turns (a proxy that serialised it would take 100 times).
func TestAddsConfiguredDelay(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	base := client(t, startProxy(t, b.Addr(), 0), 1)
	for _, rtt := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			c := client(t, startProxy(t, b.Addr(), rtt), 1)
			check := func(what string, n int, zero, delayed netdelay.Pinger) time.Duration {
				t.Helper()
				var without, with latency.Histogram
				for _, p := range []netdelay.Pinger{zero, delayed} {
					if err := p.Ping(ctx).Err(); err != nil { // connect
						t.Fatal(err)
					}
				}
				for range n {
					for _, s := range []struct {
						p netdelay.Pinger
						h *latency.Histogram
					}{{zero, &without}, {delayed, &with}} {
						start := time.Now()
						if err := s.p.Ping(ctx).Err(); err != nil {
							t.Fatal(err)
						}
						d := time.Since(start)
						if s.h == &with && d < rtt {
							t.Fatalf("%s: a round trip through the proxy took %v, less than its delay %v", what, d, rtt)
						}
						s.h.Record(d)
					}
				}
				z, got := without.Quantile(0.5), with.Quantile(0.5)
				t.Logf("%s: median %v without delay, %v with %v: %v added", what, z, got, rtt, got-z)
				return got
			}
			ping := check("PING", 200, base, c)
			pipe := check("pipeline of 100", 50, pipelinePinger{base, 100}, pipelinePinger{c, 100})
			if pipe > 20*ping {
				t.Errorf("a pipeline of 100 took %v (median), %d times a PING's %v: the proxy delays each command",
					pipe, pipe/ping, ping)
			}
		})
	}
}

// pipelinePinger sends n PINGs in one pipeline for each Ping.
type pipelinePinger struct {
	c redis.UniversalClient
	n int
}

func (p pipelinePinger) Ping(ctx context.Context) *redis.StatusCmd {
	pipe := p.c.Pipeline()
	cmds := make([]*redis.StatusCmd, p.n)
	for i := range cmds {
		cmds[i] = pipe.Ping(ctx)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		cmd := redis.NewStatusCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	return cmds[p.n-1]
}
