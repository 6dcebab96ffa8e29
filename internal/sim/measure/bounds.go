package measure

import (
	"fmt"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
)

// What one cell may ask of the machine. A cell beyond these is refused
// before anything starts, with a hint, rather than left to crawl or to
// run the machine out of memory.
const (
	// maxCellWorkers bounds the listers and buyers of a cell over all its
	// markets: each holds a Redis connection of its own, and Redis accepts
	// 10,000 clients by default (maxclients), the set-up's and the
	// server's others included.
	maxCellWorkers = 8_000
	// workerBytes is what a worker costs the simulator's memory: its
	// goroutine, its connection's buffers and its wait histogram, about
	// 34 KiB measured after a second, and the histogram's 58 KiB as if it
	// were all touched (results/scale/bounds.txt).
	workerBytes = 100 << 10
	// listingBytes is what a prefilled listing costs: 166 bytes of Redis's
	// used_memory and about 770 bytes of the simulator's RSS (734 MiB with
	// 10^6 listings prefilled; results/scale/prefill-1000000).
	listingBytes = 940
)

// MinSlice is the shortest slice of a cell -rounds may make: shorter, a
// slice measures its market's set-up more than its workers.
const MinSlice = 10 * time.Millisecond

// MaxRounds bounds -rounds.
const MaxRounds = 100

// CheckBounds refuses scenarios whose largest cell the machine cannot
// hold: more workers than maxCellWorkers, or more memory (workers and
// prefilled listings) than the machine has available, where it says.
func CheckBounds(scenarios []sim.Scenario, markets, prefill int) error {
	largest := sim.Scenario{}
	for _, sc := range scenarios {
		if sc.Listers+sc.Buyers > largest.Listers+largest.Buyers {
			largest = sc
		}
	}
	workers := markets * (largest.Listers + largest.Buyers)
	what := largest.String()
	if markets > 1 {
		what += fmt.Sprintf(" with -markets %d", markets)
	}
	if workers > maxCellWorkers {
		return fmt.Errorf("%s runs %s workers in a cell, beyond the %s one cell may run (each holds a Redis "+
			"connection, and Redis accepts 10,000 clients by default): use fewer listers, buyers or -markets",
			what, output.Thousands(int64(workers)), output.Thousands(maxCellWorkers))
	}
	need := int64(workers)*workerBytes + int64(markets)*int64(prefill)*listingBytes
	if avail, ok := probe.AvailableMemory(); ok && need > avail {
		return fmt.Errorf("%s with -prefill %s needs about %s of memory (%s per worker, %d bytes per listing), "+
			"more than the %s this machine has available: use fewer workers, markets or a smaller -prefill",
			what, output.Thousands(int64(prefill)), gib(need), kib(workerBytes), listingBytes, gib(avail))
	}
	return nil
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
func kib(b int64) string { return fmt.Sprintf("%d KiB", b>>10) }
