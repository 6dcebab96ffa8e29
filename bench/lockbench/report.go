package lockbench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
)

// Report is the outcome of a whole run.
type Report struct {
	// Env is where the run happened: the redis-server and the machine.
	output.Env
	Command  string     `json:"command"`
	Configs  []Config   `json:"-"`
	Results  []*Result  `json:"-"`
	Ceilings []Ceiling  `json:"ceiling"`
	Rows     []Row      `json:"rows"`
	Targets  []Target   `json:"targets"`
	Settings []Settings `json:"configs"`
}

// Settings names a config and how it is set up.
type Settings struct {
	Name     string `json:"name"`
	Library  string `json:"library"`
	Settings string `json:"settings"`
}

// Row is one (cell, config) line of the table, with ratios against the
// baseline (the first config of package locking).
type Row struct {
	Mode        Mode    `json:"mode"`
	Goroutines  int     `json:"goroutines"`
	Config      string  `json:"config"`
	Ours        bool    `json:"ours"`
	OpsPerSec   float64 `json:"acquires_per_s"`
	TriesPerSec float64 `json:"tries_per_s"`
	P50WaitMs   float64 `json:"p50_wait_ms"`
	P99WaitMs   float64 `json:"p99_wait_ms"`
	P999WaitMs  float64 `json:"p999_wait_ms"`
	MaxWaitMs   float64 `json:"max_wait_ms"`
	TopShare    float64 `json:"top_share"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	TripsPerOp  float64 `json:"round_trips_per_op"`
	RedisCPU    float64 `json:"redis_cpu_frac"`
	GoCPU       float64 `json:"go_cpu_frac"`
	NewConns    int64   `json:"new_conns"`
	Overlaps    int64   `json:"overlaps"`
	GaveUp      int64   `json:"gave_up"`
	Errors      int64   `json:"errors"`
	LastError   string  `json:"last_error,omitempty"`
	// OursOverOps is baseline acquires/s ÷ this row's (peer rows only).
	OursOverOps float64 `json:"ours_over_peer_ops,omitempty"`
	// OursOverP99 is baseline p99 ÷ this row's p99 (lower is better for
	// ours).
	OursOverP99 float64 `json:"ours_over_peer_p99,omitempty"`
	// OursOverAllocs is baseline allocs/op ÷ this row's.
	OursOverAllocs float64 `json:"ours_over_peer_allocs,omitempty"`
	// CeilingFrac is acquires/s ÷ redis-benchmark SET requests/s at the
	// same client count (0 when that count was not measured).
	CeilingFrac float64 `json:"ops_over_set_ceiling,omitempty"`
}

// Target is one of the comparison goals, evaluated.
type Target struct {
	Goal    string  `json:"goal"`
	Ours    string  `json:"ours"`
	Against string  `json:"against"`
	Ratio   float64 `json:"ratio"`
	Want    string  `json:"want"`
	Met     bool    `json:"met"`
}

// Build fills Rows, Targets and Settings from Results and Ceilings.
func (r *Report) Build() {
	r.Settings = nil
	for _, c := range r.Configs {
		r.Settings = append(r.Settings, Settings{Name: c.Name, Library: c.Library, Settings: c.Settings})
	}
	ceil := map[int]float64{}
	for _, c := range r.Ceilings {
		ceil[c.Clients] = c.SetRPS
	}
	r.Rows = nil
	var base *Result
	for _, res := range r.Results {
		if base == nil || base.Cell != res.Cell {
			base = nil
			for _, b := range r.Results {
				if b.Cell == res.Cell && b.Ours {
					base = b
					break
				}
			}
		}
		row := Row{
			Mode: res.Cell.Mode, Goroutines: res.Cell.Goroutines, Config: res.Config, Ours: res.Ours,
			OpsPerSec: res.OpsPerSec(), TriesPerSec: res.TriesPerSec(),
			P50WaitMs: latency.Milliseconds(res.P50()), P99WaitMs: latency.Milliseconds(res.P99()), P999WaitMs: latency.Milliseconds(res.P999()),
			MaxWaitMs: latency.Milliseconds(res.MaxWait), TopShare: res.TopShare,
			AllocsPerOp: res.AllocsPerOp(), BytesPerOp: res.BytesPerOp(), TripsPerOp: res.TripsPerOp(),
			RedisCPU: res.RedisCPUFrac(), GoCPU: res.GoCPUFrac(),
			NewConns: res.NewConns, Overlaps: res.Overlaps, GaveUp: res.GaveUp, Errors: res.Errors, LastError: res.LastError,
		}
		if base != nil && !res.Ours {
			row.OursOverOps = ratio(base.OpsPerSec(), res.OpsPerSec())
			row.OursOverP99 = ratio(latency.Milliseconds(base.P99()), latency.Milliseconds(res.P99()))
			row.OursOverAllocs = ratio(base.AllocsPerOp(), res.AllocsPerOp())
		}
		if c, ok := ceil[res.Cell.Goroutines]; ok {
			row.CeilingFrac = ratio(res.OpsPerSec(), c)
		}
		r.Rows = append(r.Rows, row)
	}
	r.Targets = r.targets()
}

func (r *Report) targets() []Target {
	var out []Target
	find := func(mode Mode, g int) []Row {
		var rows []Row
		for _, row := range r.Rows {
			if row.Mode == mode && row.Goroutines == g {
				rows = append(rows, row)
			}
		}
		return rows
	}
	bestPeer := func(rows []Row, better func(a, b Row) bool) (Row, bool) {
		var best Row
		found := false
		for _, row := range rows {
			if !row.Ours && (!found || better(row, best)) {
				best, found = row, true
			}
		}
		return best, found
	}
	fasterOps := func(a, b Row) bool { return a.OpsPerSec > b.OpsPerSec }
	for _, g := range []int{1, 16} {
		rows := find(Uncontended, g)
		peer, ok := bestPeer(rows, fasterOps)
		for _, ours := range rows {
			if !ours.Ours || !ok {
				continue
			}
			q := ratio(ours.OpsPerSec, peer.OpsPerSec)
			out = append(out, Target{
				Goal: fmt.Sprintf("uncontended acquire+release, %d goroutine(s): ours ÷ faster peer (ops/s)", g),
				Ours: ours.Config, Against: peer.Config, Ratio: q, Want: ">= 1.0", Met: q >= 1.0,
			})
		}
	}
	rows := find(Contended, 10)
	if peer, ok := bestPeer(rows, fasterOps); ok {
		for _, ours := range rows {
			if !ours.Ours {
				continue
			}
			q := ratio(ours.OpsPerSec, peer.OpsPerSec)
			out = append(out, Target{
				Goal: "one key, 10 goroutines: ours ÷ best peer (acquires/s)",
				Ours: ours.Config, Against: peer.Config, Ratio: q, Want: ">= 2.0", Met: q >= 2.0,
			})
			for _, rs := range rows {
				if rs.Ours || !strings.HasPrefix(rs.Config, "redsync") {
					continue
				}
				q := ratio(ours.P99WaitMs, rs.P99WaitMs)
				out = append(out, Target{
					Goal: "one key, 10 goroutines: ours ÷ redsync (p99 acquisition wait)",
					Ours: ours.Config, Against: rs.Config, Ratio: q, Want: "<= 0.2", Met: q <= 0.2,
				})
			}
		}
	}
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// WriteJSON writes the report as one JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// header names the columns of the wide table and the markdown view.
var header = []string{
	"cell", "g", "config", "acquires/s", "tries/s", "p50 ms", "p99 ms", "p99.9 ms", "max wait ms", "top share", "allocs/op", "B/op", "RT/op",
	"redis CPU", "Go CPU", "new conns", "overlaps", "gave up", "errors", "ours/peer acq/s", "ours/peer p99", "ours/peer allocs", "acq/s ÷ SET ceiling",
}

// narrow picks the columns of the default table, which fits output.Width
// columns: throughput, the waits, round trips and the two counts that
// must be zero; the ratios ours/peer are judged in the targets below it.
var narrow = []int{0, 1, 2, 3, 5, 6, 8, 12, 16, 18}

// narrowHeader names the columns of the default table.
var narrowHeader = []string{"cell", "g", "config", "acquires/s", "p50 ms", "p99 ms", "max ms", "RT/op", "overlaps", "errors"}

func (row Row) cells() []string {
	opt := func(v float64, f string) string {
		if v == 0 {
			return "—"
		}
		return fmt.Sprintf(f, v)
	}
	return []string{
		string(row.Mode), fmt.Sprint(row.Goroutines), row.Config,
		fmt.Sprintf("%.0f", row.OpsPerSec), fmt.Sprintf("%.0f", row.TriesPerSec),
		fmt.Sprintf("%.3f", row.P50WaitMs), fmt.Sprintf("%.3f", row.P99WaitMs), fmt.Sprintf("%.3f", row.P999WaitMs),
		opt(row.MaxWaitMs, "%.1f"), opt(row.TopShare, "%.2f"),
		fmt.Sprintf("%.1f", row.AllocsPerOp), fmt.Sprintf("%.0f", row.BytesPerOp), fmt.Sprintf("%.2f", row.TripsPerOp),
		fmt.Sprintf("%.0f%%", 100*row.RedisCPU), fmt.Sprintf("%.0f%%", 100*row.GoCPU),
		fmt.Sprint(row.NewConns), fmt.Sprint(row.Overlaps), fmt.Sprint(row.GaveUp), fmt.Sprint(row.Errors),
		opt(row.OursOverOps, "%.2fx"), opt(row.OursOverP99, "%.3fx"), opt(row.OursOverAllocs, "%.2fx"),
		opt(row.CeilingFrac, "%.2f"),
	}
}

func pick(cells []string, cols []int) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = cells[c]
	}
	return out
}

// WriteText writes aligned plain-text tables: by default the columns and
// lines that fit output.Width columns, with wide every column.
func (r *Report) WriteText(w io.Writer, wide bool) error {
	cols, head := func(cells []string) []string { return pick(cells, narrow) }, narrowHeader
	if wide {
		cols, head = func(cells []string) []string { return cells }, header
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, row := range r.Rows {
		fmt.Fprintln(tw, strings.Join(cols(row.cells()), "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !wide {
		fmt.Fprintln(w, "-wide: every column (tries/s, p99.9, top share, allocs, CPU, conns, gave up, ratios ours/peer).")
	}
	if len(r.Ceilings) > 0 {
		fmt.Fprintln(w, "\nceiling (redis-benchmark, same server):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "clients\tSET req/s\tSET p50 ms\tEVAL req/s\tEVAL p50 ms\t")
		for _, c := range r.Ceilings {
			fmt.Fprintf(tw, "%d\t%.0f\t%.3f\t%.0f\t%.3f\t\n", c.Clients, c.SetRPS, c.SetP50Ms, c.EvalRPS, c.EvalP50Ms)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\ntargets:")
	for _, t := range r.Targets {
		if wide {
			fmt.Fprintf(w, "  %-70s %-16s vs %-16s %.3f (want %s) %s\n", t.Goal, t.Ours, t.Against, t.Ratio, t.Want, verdict(t.Met))
			continue
		}
		fmt.Fprintf(w, "  %s\n    %s vs %s: %.3f (want %s) %s\n", t.Goal, t.Ours, t.Against, t.Ratio, t.Want, verdict(t.Met))
	}
	fmt.Fprintln(w, "\nconfigs:")
	for _, s := range r.Settings {
		if wide {
			fmt.Fprintf(w, "  %-16s %s\n", s.Name, s.Settings)
			continue
		}
		lines := strings.Split(output.Wrap(s.Settings, output.Width-19), "\n")
		fmt.Fprintf(w, "  %-16s %s\n", s.Name, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%19s%s\n", "", l)
		}
	}
	machine := r.machine()
	if !wide {
		machine = output.Wrap(machine, output.Width)
	}
	fmt.Fprintf(w, "\n%s\n", machine)
	return nil
}

// machine describes where the run happened in one sentence.
func (r *Report) machine() string {
	return fmt.Sprintf("machine: %d CPUs, %s; redis-server %s; %s", r.Machine.CPUs, r.Machine.CPUModel, r.Redis.Version, r.Machine.GoVersion)
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

// WriteMarkdown writes the same tables in GitHub markdown.
func (r *Report) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
	for _, row := range r.Rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row.cells(), " | "))
	}
	if len(r.Ceilings) > 0 {
		fmt.Fprintln(w, "\n| clients | SET req/s | SET p50 ms | EVAL req/s | EVAL p50 ms |\n|---|---|---|---|---|")
		for _, c := range r.Ceilings {
			fmt.Fprintf(w, "| %d | %.0f | %.3f | %.0f | %.3f |\n", c.Clients, c.SetRPS, c.SetP50Ms, c.EvalRPS, c.EvalP50Ms)
		}
	}
	fmt.Fprintln(w, "\n| target | ours | against | ratio | want | verdict |\n|---|---|---|---|---|---|")
	for _, t := range r.Targets {
		fmt.Fprintf(w, "| %s | %s | %s | %.3f | %s | %s |\n", t.Goal, t.Ours, t.Against, t.Ratio, t.Want, verdict(t.Met))
	}
	fmt.Fprintln(w, "\n| config | settings |\n|---|---|")
	for _, s := range r.Settings {
		fmt.Fprintf(w, "| %s | %s |\n", s.Name, s.Settings)
	}
	fmt.Fprintf(w, "\nMachine: %d CPUs, %s; redis-server %s; %s.\n", r.Machine.CPUs, r.Machine.CPUModel, r.Redis.Version, r.Machine.GoVersion)
	return nil
}
