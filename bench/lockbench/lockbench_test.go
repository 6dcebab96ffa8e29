package lockbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

func TestEveryConfigExcludesAndReleases(t *testing.T) {
	b := redistest.Real(t)
	r := &Runner{Addr: b.Addr(), TTL: 10 * time.Second, Admin: b.Client}
	t.Cleanup(r.Close)
	for _, c := range Configs() {
		t.Run(c.Name, func(t *testing.T) {
			for _, cell := range []Cell{
				{Mode: Uncontended, Goroutines: 2},
				{Mode: Contended, Goroutines: 3},
			} {
				var res Result
				if err := r.Run(context.Background(), c, cell, 200*time.Millisecond, &res); err != nil {
					t.Fatal(err)
				}
				if res.Acquires == 0 || res.Errors != 0 || res.Overlaps != 0 {
					t.Fatalf("%s: acquires %d, errors %d (%s), overlaps %d", cell.Mode, res.Acquires, res.Errors, res.LastError, res.Overlaps)
				}
				if res.Tries < res.Acquires {
					t.Fatalf("%s: %d tries for %d acquires", cell.Mode, res.Tries, res.Acquires)
				}
				if res.RoundTrips < 2*res.Acquires {
					t.Fatalf("%s: %d round trips for %d acquire+release", cell.Mode, res.RoundTrips, res.Acquires)
				}
				if res.Wait.Count() != uint64(res.Acquires) {
					t.Fatalf("%s: %d waits recorded for %d acquires", cell.Mode, res.Wait.Count(), res.Acquires)
				}
			}
			// Every hold was released: no lock key is left.
			keys, err := b.Client.Keys(context.Background(), "lockbench:"+c.Name+":*").Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != 0 {
				t.Fatalf("keys left held: %v", keys)
			}
		})
	}
}

func TestSelectConfigs(t *testing.T) {
	tests := []struct {
		names   []string
		want    int
		wantErr bool
	}{
		{nil, len(Configs()), false},
		{[]string{"redislock", "locking"}, 2, false},
		{[]string{"nope"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.names), func(t *testing.T) {
			got, err := SelectConfigs(tt.names)
			if (err != nil) != tt.wantErr || len(got) != tt.want {
				t.Fatalf("SelectConfigs(%v) = %d configs, %v; want %d, error %v", tt.names, len(got), err, tt.want, tt.wantErr)
			}
			if len(got) > 0 && !got[0].Ours() {
				t.Fatalf("first config %s is not ours", got[0].Name)
			}
		})
	}
}

func TestParseBenchmarkCSV(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		rps, p50 float64
		wantErr  bool
	}{
		{"set", "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\"SET\",\"39525.69\",\"0.023\",\"0.008\",\"0.023\",\"0.031\",\"0.063\",\"4.895\"\n", 39525.69, 0.023, false},
		{"eval", "\"test\",\"rps\",\"p50_latency_ms\"\n\"EVAL return 1 0\",\"47984.64\",\"0.143\"\n", 47984.64, 0.143, false},
		{"header only", "\"test\",\"rps\",\"p50_latency_ms\"\n", 0, 0, true},
		{"no rps column", "\"test\",\"x\"\n\"SET\",\"1\"\n", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rps, p50, err := parseBenchmarkCSV(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if rps != tt.rps || p50 != tt.p50 {
				t.Fatalf("got %v, %v; want %v, %v", rps, p50, tt.rps, tt.p50)
			}
		})
	}
}
