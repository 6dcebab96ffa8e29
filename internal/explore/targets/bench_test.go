package targets_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// benchModels are the models the benchmarks search: "lean" allows the two
// faults the recipes' failures need (a pause past the lease, a crash),
// "full" every fault (short, long and endless pauses, a crash).
func benchModels() map[string]action.Model {
	full := action.DefaultModel()
	lean := action.DefaultModel()
	lean.FaultKinds = []action.Fault{action.FaultPauseLong, action.FaultCrash}
	return map[string]action.Model{"lean": lean, "full": full}
}

// BenchmarkFlawed finds a violation of the property each flawed gallery
// recipe is known to break, from its code and the generic workload, and
// reports the time for all eight and the schedules run.
func BenchmarkFlawed(b *testing.B) {
	benchAll(b, false)
}

// BenchmarkFixes checks each recipe's fix, and the watchdog under pauses
// shorter than the lease, exhaustively to the bounds, and reports the
// time for all and the schedules run.
func BenchmarkFixes(b *testing.B) {
	benchAll(b, true)
}

// benchWorkers is how many schedules a search of a fix runs at once (the
// searches for a counterexample run one at a time).
const benchWorkers = 4

func benchAll(b *testing.B, fixed bool) {
	srv := redistest.Real(b)
	ctx := context.Background()
	for _, name := range []string{"lean", "full"} {
		m := benchModels()[name]
		b.Run(name, func(b *testing.B) {
			for range b.N {
				var schedules int
				start := time.Now()
				tgs := []*sched.Target{}
				for _, n := range targets.Recipes() {
					tg, err := targets.Recipe(n, fixed)
					if err != nil {
						b.Fatal(err)
					}
					tgs = append(tgs, tg)
				}
				if fixed {
					tgs = append(tgs, targets.Watchdog(false))
				}
				for _, tg := range tgs {
					mm := m
					if tg.Name == "watchdog" {
						mm.FaultKinds = []action.Fault{action.FaultPauseShort, action.FaultCrash}
					}
					e, err := sched.NewExplorer(ctx, srv.Client, tg, mm)
					if err != nil {
						b.Fatal(err)
					}
					o := sched.Options{Workers: benchWorkers}
					if !fixed {
						o.Stop = []string{tg.Property}
					}
					t0 := time.Now()
					res, err := e.Explore(ctx, o)
					e.Close()
					if err != nil {
						b.Fatal(err)
					}
					found := len(res.Violations) > 0
					if fixed && (found || !res.Exhaustive) || !fixed && !found {
						b.Fatalf(
							"%s: violations %v, exhaustive %v", tg.Name, res.Violations,
							res.Exhaustive,
						)
					}
					schedules += res.Schedules + res.Pruned
					b.Logf(
						"%s (%s): %d schedules (+%d pruned) in %.2f s, exhaustive %v", tg.Name,
						name, res.Schedules, res.Pruned, time.Since(t0).Seconds(), res.Exhaustive,
					)
				}
				el := time.Since(start)
				b.ReportMetric(el.Seconds(), "s_all")
				b.ReportMetric(float64(schedules), "schedules")
				b.ReportMetric(float64(schedules)/el.Seconds(), "schedules/s")
			}
		})
	}
}
