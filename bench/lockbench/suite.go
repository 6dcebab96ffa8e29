package lockbench

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Options configures a whole benchmark run.
type Options struct {
	// Configs to compare; ours should come first.
	Configs []Config
	// UncontendedGoroutines are the goroutine counts of the uncontended
	// cells (each on its own key); UncontendedDuration is each config's
	// time in each of them.
	UncontendedGoroutines []int
	UncontendedDuration   time.Duration
	// ContendedGoroutines are the goroutine counts sharing one key;
	// ContendedDuration is each config's time in each of them.
	ContendedGoroutines []int
	ContendedDuration   time.Duration
	// Rounds splits every config's time in a cell into this many slices,
	// run in turn with the other configs' slices (the starting config
	// rotates), so that a drift of the machine hits all configs alike.
	Rounds int
	// Progress, when set, receives one line per finished slice.
	Progress io.Writer
}

// Cells lists the cells of o in the order they are measured.
func (o Options) Cells() []Cell {
	var cells []Cell
	for _, g := range o.UncontendedGoroutines {
		cells = append(cells, Cell{Mode: Uncontended, Goroutines: g, Duration: o.UncontendedDuration})
	}
	for _, g := range o.ContendedGoroutines {
		cells = append(cells, Cell{Mode: Contended, Goroutines: g, Duration: o.ContendedDuration})
	}
	return cells
}

// RunAll measures every config in every cell, interleaving configs within
// each cell, and returns one result per (cell, config) in cell order, then
// config order.
func (r *Runner) RunAll(ctx context.Context, o Options) ([]*Result, error) {
	rounds := max(o.Rounds, 1)
	var out []*Result
	for ci, cell := range o.Cells() {
		res := make([]*Result, len(o.Configs))
		for i := range res {
			res[i] = &Result{}
		}
		slice := cell.Duration / time.Duration(rounds)
		for round := range rounds {
			for k := range o.Configs {
				i := (k + ci + round) % len(o.Configs)
				c := o.Configs[i]
				if err := r.Run(ctx, c, cell, slice, res[i]); err != nil {
					return nil, fmt.Errorf("%s %s %d: %w", c.Name, cell.Mode, cell.Goroutines, err)
				}
				if o.Progress != nil {
					fmt.Fprintf(o.Progress, "  %-11s g=%-2d round %d/%d %-16s %9.0f acquires/s so far\n",
						cell.Mode, cell.Goroutines, round+1, rounds, c.Name, res[i].OpsPerSec())
				}
			}
		}
		out = append(out, res...)
	}
	return out, nil
}

// Ceiling is what redis-benchmark reaches on the same server.
type Ceiling struct {
	Clients int     `json:"clients"`
	SetRPS  float64 `json:"set_rps"`
	EvalRPS float64 `json:"eval_rps"`
	// SetP50Ms, EvalP50Ms are redis-benchmark's median latencies.
	SetP50Ms  float64 `json:"set_p50_ms"`
	EvalP50Ms float64 `json:"eval_p50_ms"`
}

// ErrNoRedisBenchmark is returned when redis-benchmark is not on PATH.
var ErrNoRedisBenchmark = errors.New("lockbench: redis-benchmark not on PATH")

// MeasureCeiling runs redis-benchmark (SET, and EVAL "return 1" 0) with
// each client count against host:port, requests requests per run.
func MeasureCeiling(ctx context.Context, host string, port int, clients []int, requests int) ([]Ceiling, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return nil, ErrNoRedisBenchmark
	}
	var out []Ceiling
	for _, c := range clients {
		base := []string{"-h", host, "-p", strconv.Itoa(port), "-c", strconv.Itoa(c), "-n", strconv.Itoa(requests), "--csv"}
		set, setP50, err := runRedisBenchmark(ctx, bin, append(base, "-t", "set"))
		if err != nil {
			return nil, err
		}
		eval, evalP50, err := runRedisBenchmark(ctx, bin, append(base, "EVAL", "return 1", "0"))
		if err != nil {
			return nil, err
		}
		out = append(out, Ceiling{Clients: c, SetRPS: set, EvalRPS: eval, SetP50Ms: setP50, EvalP50Ms: evalP50})
	}
	return out, nil
}

// runRedisBenchmark runs one redis-benchmark test and parses its --csv
// output: a header, then "test","rps",...,"p50_latency_ms",...
func runRedisBenchmark(ctx context.Context, bin string, args []string) (rps, p50 float64, err error) {
	b, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("redis-benchmark %s: %w", strings.Join(args, " "), err)
	}
	return parseBenchmarkCSV(string(b))
}

func parseBenchmarkCSV(s string) (rps, p50 float64, err error) {
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		return 0, 0, fmt.Errorf("redis-benchmark output: %w", err)
	}
	if len(recs) < 2 {
		return 0, 0, fmt.Errorf("redis-benchmark output has no result row: %q", s)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	ri, ok1 := col["rps"]
	pi, ok2 := col["p50_latency_ms"]
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("redis-benchmark output lacks rps or p50_latency_ms: %q", recs[0])
	}
	row := recs[len(recs)-1]
	if rps, err = strconv.ParseFloat(row[ri], 64); err != nil {
		return 0, 0, fmt.Errorf("redis-benchmark rps: %w", err)
	}
	if p50, err = strconv.ParseFloat(row[pi], 64); err != nil {
		return 0, 0, fmt.Errorf("redis-benchmark p50: %w", err)
	}
	return rps, p50, nil
}
