package exploresession_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
)

// footprint is the process's live heap, goroutines and open files.
func footprint() (heap uint64, goroutines, files int) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, _ := os.ReadDir("/proc/self/fd")
	return ms.HeapInuse, runtime.NumGoroutine(), len(fds)
}

// TestSixtySessions opens 60 sessions of recipe 1 at once, each from a
// client of its own and stepped to its violation (A and B start, A GET, B
// GET, A SET, B SET), and reports what one session costs: the heap, the
// goroutines and the open files (docs/lab.md sets the limits from it).
func TestSixtySessions(t *testing.T) {
	const n = 60
	ctx := context.Background()
	m := exploresession.NewManager()
	defer m.Close()
	heap0, g0, f0 := footprint()
	for i := range n {
		id, st, err := m.Start(ctx, fmt.Sprintf("192.0.2.%d", i), api.ExploreRequest{Recipe: ptr("1")})
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
		s := st
		for _, want := range []struct{ kind, client string }{
			{"start", "A"}, {"start", "B"}, {"run", "A"}, {"run", "B"}, {"run", "A"}, {"run", "B"},
		} {
			var body []byte
			for _, a := range s.Enabled {
				if a.Kind == want.kind && a.Client == want.client {
					body, _ = json.Marshal(a)
				}
			}
			got, err := m.Step(ctx, id, body)
			if err != nil {
				t.Fatalf("session %d: %v", i+1, err)
			}
			s = got
		}
		if len(s.Violations) != 1 {
			t.Fatalf("session %d after 6 steps: violations %+v", i+1, s.Violations)
		}
	}
	heap, g, f := footprint()
	per := func(a, b uint64) float64 { return float64(a-b) / n }
	t.Logf("%d sessions of recipe 1, each stepped 6 times: heap %.0f KiB, %.1f goroutines, %.1f open files per session "+
		"(heap %d MiB in all)", n, per(heap, heap0)/1024, per(uint64(g), uint64(g0)), per(uint64(f), uint64(f0)), (heap-heap0)>>20)
}
