package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

func TestParseScenario(t *testing.T) {
	tests := []struct {
		in      string
		want    Scenario
		wantErr bool
	}{
		{"1x1", Scenario{1, 1}, false},
		{"5x1", Scenario{5, 1}, false},
		{" 50X50 ", Scenario{50, 50}, false},
		{"1000x1000", Scenario{1000, 1000}, false},
		{"5y5", Scenario{}, true},
		{"5", Scenario{}, true},
		{"0x1", Scenario{}, true},
		{"1x0", Scenario{}, true},
		{"-1x1", Scenario{}, true},
		{"1001x1", Scenario{}, true},
		{"ax1", Scenario{}, true},
		{"1x1x1", Scenario{}, true},
		{"", Scenario{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseScenario(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrBadScenario) {
					t.Fatalf("ParseScenario(%q) = %v, %v; want ErrBadScenario", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseScenario(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.want.String() {
				t.Fatalf("String() = %q", got.String())
			}
		})
	}
}

func TestParseScenarios(t *testing.T) {
	got, err := ParseScenarios("1x1, 5x5,1x1,,10x2")
	if err != nil {
		t.Fatal(err)
	}
	want := []Scenario{{1, 1}, {5, 5}, {10, 2}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	for _, bad := range []string{"", ",", "1x1,5y5"} {
		if _, err := ParseScenarios(bad); !errors.Is(err, ErrBadScenario) {
			t.Errorf("ParseScenarios(%q) error = %v, want ErrBadScenario", bad, err)
		}
	}
}

// TestRunCell runs a short cell of every strategy and checks that it
// lists, buys, passes the audit and leaves no keys behind.
func TestRunCell(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		for _, st := range market.Strategies {
			t.Run(string(st), func(t *testing.T) {
				t.Parallel() // a market of its own on the backend; each run waits out its duration
				sc := Scenario{2, 2}
				c := redisconn.SizedClient(b.Client, sc.Listers+sc.Buyers+2)
				if b.Mini != nil {
					c.AddHook(redisconn.MiniWatchHook{})
				}
				defer c.Close()
				// On a busy machine a short cell may end before a purchase
				// completes: the cell is run again, twice as long, until
				// one does (at most 4.8 s), so that its outcome does not
				// depend on the machine's speed.
				var res Result
				progress := 0
				for d := 300 * time.Millisecond; ; d *= 2 {
					progress = 0
					var err error
					res, err = Run(context.Background(), Config{
						Client: c, Scenario: sc, Strategy: st, Duration: d,
						Seed: 1, Pick: 3, Name: "t-" + string(st), ProgressEvery: 50 * time.Millisecond,
						Progress: func(Counters) { progress++ },
					})
					if err != nil {
						t.Fatal(err)
					}
					if res.Bought > 0 || d >= 4800*time.Millisecond {
						break
					}
					t.Logf("nothing bought in %v: again, for %v", d, 2*d)
				}
				if res.Listed == 0 || res.Bought == 0 {
					t.Errorf("listed %d bought %d: nothing happened", res.Listed, res.Bought)
				}
				if v := res.Audit.Total(); v != 0 {
					t.Errorf("audit: %d violations: %v", v, res.Audit.Details)
				}
				if res.Audit.Items != int(res.Listed+res.FailedLists) {
					t.Errorf("audit saw %d items, created %d", res.Audit.Items, res.Listed+res.FailedLists)
				}
				if res.Wait.Count() != uint64(res.Bought) {
					t.Errorf("%d waits for %d purchases", res.Wait.Count(), res.Bought)
				}
				if res.Interrupted || res.Elapsed < res.Duration {
					t.Errorf("interrupted %v elapsed %v", res.Interrupted, res.Elapsed)
				}
				if progress == 0 {
					t.Error("progress never called")
				}
				if res.FirstError != "" {
					t.Errorf("unexpected error: %s", res.FirstError)
				}
				keys, err := b.Client.Keys(context.Background(), "{t-"+string(st)+"}:*").Result()
				if err != nil || len(keys) != 0 {
					t.Errorf("keys left: %v %v", keys, err)
				}
			})
		}
	})
}

// TestRunInterrupted: ending the context stops the cell early, and the
// cell is still audited.
func TestRunInterrupted(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(100 * time.Millisecond); cancel() }()
		res, err := Run(ctx, Config{Client: b.Client, Scenario: Scenario{1, 1}, Strategy: market.Fine, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Interrupted || res.Elapsed >= time.Minute {
			t.Fatalf("interrupted %v elapsed %v", res.Interrupted, res.Elapsed)
		}
		if v := res.Audit.Total(); v != 0 {
			t.Errorf("audit: %v", res.Audit.Details)
		}
	})
}

func TestRunRejectsBadConfig(t *testing.T) {
	b := redistest.Mini(t)
	good := Config{Client: b.Client, Scenario: Scenario{1, 1}, Strategy: market.Lua, Duration: time.Millisecond}
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"no client", func(c *Config) { c.Client = nil }},
		{"strategy", func(c *Config) { c.Strategy = "optimistic" }},
		{"scenario", func(c *Config) { c.Scenario = Scenario{0, 1} }},
		{"duration", func(c *Config) { c.Duration = -time.Second }},
		{"pick", func(c *Config) { c.Pick = -1 }},
		{"markets", func(c *Config) { c.Markets = MaxMarkets + 1 }},
		{"negative markets", func(c *Config) { c.Markets = -1 }},
		{"names for markets", func(c *Config) { c.Markets, c.Names = 2, []string{"a"} }},
		{"prefill", func(c *Config) { c.Prefill = -1 }},
		{"prefill too large", func(c *Config) { c.Prefill = MaxPrefill + 1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mod(&cfg)
			if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
		})
	}
	t.Run("market exists", func(t *testing.T) {
		cfg := good
		cfg.Name, cfg.KeepKeys = "taken", true
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		cfg.KeepKeys = false
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Fatalf("second run on the same market: err = %v, want ErrConfig", err)
		}
		m, err := market.New(b.Client, "taken")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Delete(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(b.Mini.Keys()); n != 0 {
			t.Fatalf("%d keys left after Delete", n)
		}
	})
}

// TestRunMarketsAndPrefill runs cells of several markets, each prefilled,
// and checks the totals, the audit of every market, the prefill figures
// and the clean-up.
func TestRunMarketsAndPrefill(t *testing.T) {
	redistest.RunParallel(t, func(t *testing.T, b *redistest.Backend) {
		for _, st := range []market.Strategy{market.Fine, market.Lua} {
			t.Run(string(st), func(t *testing.T) {
				ctx := context.Background()
				sc := Scenario{1, 1}
				c := redisconn.SizedClient(b.Client, 3*(sc.Listers+sc.Buyers)+2)
				if b.Mini != nil {
					c.AddHook(redisconn.MiniWatchHook{})
				}
				defer c.Close()
				const prefill = 2500 // three bulk calls per market
				res, err := Run(ctx, Config{
					Client: c, Scenario: sc, Strategy: st, Duration: 200 * time.Millisecond,
					Seed: 1, Name: "mp-" + string(st), Markets: 3, Prefill: prefill,
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Markets) != 3 || res.Market != res.Markets[0] {
					t.Fatalf("markets %v (first %q), want 3", res.Markets, res.Market)
				}
				if v := res.Audit.Total(); v != 0 {
					t.Errorf("audit: %d violations: %v", v, res.Audit.Details)
				}
				// Every market's prefilled items plus the listers' items.
				if want := 3*prefill + int(res.Listed+res.FailedLists); res.Audit.Items != want {
					t.Errorf("audit saw %d items, want %d", res.Audit.Items, want)
				}
				if res.Audit.Users != 3*(sc.Listers+sc.Buyers+1) {
					t.Errorf("audit saw %d users, want %d", res.Audit.Users, 3*(sc.Listers+sc.Buyers+1))
				}
				if res.Listed == 0 || res.Bought == 0 {
					t.Errorf("listed %d bought %d: nothing happened", res.Listed, res.Bought)
				}
				if res.Prefill != prefill || res.PrefillTime <= 0 {
					t.Errorf("prefill %d in %v", res.Prefill, res.PrefillTime)
				}
				if res.ClientCPU <= 0 {
					t.Errorf("client CPU %v", res.ClientCPU)
				}
				perListing, ok := res.PrefillBytesPerListing()
				if b.Mini == nil {
					// A real server reports memory and CPU.
					if !ok || perListing <= 0 || res.MarketBytes <= 0 || res.RedisCommands() <= 0 {
						t.Errorf("per listing %v (%v), zset %d bytes, %d commands", perListing, ok, res.MarketBytes, res.RedisCommands())
					}
				} else if ok {
					t.Errorf("miniredis reported %v bytes per listing", perListing)
				}
				for _, name := range res.Markets {
					keys, err := b.Client.Keys(ctx, "{"+name+"}:*").Result()
					if err != nil || len(keys) != 0 {
						t.Errorf("market %s left keys: %v %v", name, len(keys), err)
					}
				}
			})
		}
	})
}

// TestSpreadNames: on a cluster, consecutive names land on the masters in
// turn; on one server they are the plain sequence.
func TestSpreadNames(t *testing.T) {
	ctx := context.Background()
	t.Run("single server", func(t *testing.T) {
		b := redistest.Mini(t)
		got, err := SpreadNames(ctx, b.Client, "m", 3)
		if err != nil || len(got) != 3 || got[0] != "m-0" || got[2] != "m-2" {
			t.Fatalf("SpreadNames = %v, %v", got, err)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		c, _ := redistest.Cluster(t, 3)
		names, err := SpreadNames(ctx, c, "m", 6)
		if err != nil || len(names) != 6 {
			t.Fatalf("SpreadNames = %v, %v", names, err)
		}
		count := map[string]int{}
		for _, n := range names {
			node, err := c.MasterForKey(ctx, "{"+n+"}:market:")
			if err != nil {
				t.Fatal(err)
			}
			count[node.Options().Addr]++
		}
		if len(count) != 3 {
			t.Fatalf("markets per master %v, want 2 on each of 3", count)
		}
		for addr, n := range count {
			if n != 2 {
				t.Fatalf("master %s has %d markets, want 2 (%v)", addr, n, count)
			}
		}
	})
}
