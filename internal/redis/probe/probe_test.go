package probe_test

import (
	"context"
	"os"
	"testing"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestReadServerStats reads the counters of a real server, which reports
// all of them, and of miniredis, which does not.
func TestReadServerStats(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		if err := b.Client.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		s, err := probe.ReadServerStats(ctx, b.Client)
		if !b.Real() {
			if err == nil && s.OK {
				t.Fatalf("miniredis reported every counter: %+v", s)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !s.OK || s.Masters != 1 || s.UsedMemory <= 0 || s.Commands <= 0 {
			t.Fatalf("stats %+v", s)
		}
		if n := probe.KeyMemory(ctx, b.Client, "k"); n <= 0 {
			t.Fatalf("MEMORY USAGE k = %d", n)
		}
	})
}

// TestReadServerStatsCluster sums the counters of every master.
func TestReadServerStatsCluster(t *testing.T) {
	c, _ := redistest.Cluster(t, 3)
	s, err := probe.ReadServerStats(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !s.OK || s.Masters != 3 || s.UsedMemory <= 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestProcess(t *testing.T) {
	_, err := os.Stat("/proc/self/status")
	if rss := probe.ProcessRSS(); (rss > 0) != (err == nil) {
		t.Fatalf("ProcessRSS() = %d with /proc/self/status: %v", rss, err)
	}
	if cpu := probe.ProcessCPU(); cpu <= 0 {
		t.Fatalf("ProcessCPU() = %v", cpu)
	}
}
