package lockbench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/testsupport/jsonkeys"
)

// bigReport is a report of every config in every default cell at the
// largest figures a run gives here (six-digit rates, waits of seconds),
// with the ceiling, the targets and the configs' settings.
func bigReport() *Report {
	r := &Report{Env: output.NewEnv("redis-server", "7.0.15"), Command: "lockbench"}
	for _, c := range Configs() {
		r.Settings = append(r.Settings, Settings{Name: c.Name, Library: c.Library, Settings: c.Settings})
	}
	cells := []Cell{{Mode: Uncontended, Goroutines: 1}, {Mode: Uncontended, Goroutines: 16},
		{Mode: Contended, Goroutines: 1}, {Mode: Contended, Goroutines: 2}, {Mode: Contended, Goroutines: 5},
		{Mode: Contended, Goroutines: 10}}
	for _, cell := range cells {
		for _, c := range Configs() {
			r.Rows = append(r.Rows, Row{Mode: cell.Mode, Goroutines: cell.Goroutines, Config: c.Name, Ours: c.Library == "locking",
				OpsPerSec: 123_456, TriesPerSec: 9_876_543, P50WaitMs: 12.345, P99WaitMs: 158.123, P999WaitMs: 1234.567,
				MaxWaitMs: 9999.9, TopShare: 0.99, AllocsPerOp: 123.4, BytesPerOp: 12345, TripsPerOp: 12.34,
				RedisCPU: 0.99, GoCPU: 1.99, NewConns: 1234, Overlaps: 0, GaveUp: 123456, Errors: 123456,
				OursOverOps: 12.34, OursOverP99: 0.123, OursOverAllocs: 1.23, CeilingFrac: 0.99})
		}
	}
	for _, n := range []int{1, 2, 5, 10, 16} {
		r.Ceilings = append(r.Ceilings, Ceiling{Clients: n, SetRPS: 123_456, EvalRPS: 123_456, SetP50Ms: 0.123, EvalP50Ms: 0.123})
	}
	r.Targets = r.targets()
	return r
}

// TestWriteTextFits: the default table and everything printed with it fit
// output.Width columns; -wide has every column. The JSON follows the
// output schema.
func TestWriteTextFits(t *testing.T) {
	r := bigReport()
	if len(r.Targets) == 0 {
		t.Fatal("no targets")
	}
	var narrowOut, wideOut bytes.Buffer
	if err := r.WriteText(&narrowOut, false); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&wideOut, true); err != nil {
		t.Fatal(err)
	}
	if w := output.Widest(narrowOut.String()); w > output.Width {
		t.Errorf("the default output is %d columns wide, more than %d:\n%s", w, output.Width, narrowOut.String())
	}
	t.Logf("default %d columns, -wide %d", output.Widest(narrowOut.String()), output.Widest(wideOut.String()))
	if len(narrowHeader) != len(narrow) {
		t.Fatalf("%d narrow headers for %d columns", len(narrowHeader), len(narrow))
	}
	for _, col := range narrowHeader {
		if !strings.Contains(narrowOut.String(), col) {
			t.Errorf("default table lacks %q", col)
		}
	}
	for _, col := range header {
		if !strings.Contains(wideOut.String(), col) {
			t.Errorf("wide table lacks %q", col)
		}
	}
	for _, s := range r.Settings {
		for _, word := range strings.Fields(s.Settings) {
			if !strings.Contains(narrowOut.String(), word) {
				t.Errorf("settings of %s lack %q in the default output", s.Name, word)
			}
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	jsonkeys.Check(t, "lockbench -format json", js.Bytes())
	var doc struct {
		Redis struct{ Mode, Version string }
		Rows  []map[string]any
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Redis.Version != "7.0.15" || doc.Rows[0]["p99_wait_ms"] != 158.123 {
		t.Errorf("redis %+v, first row %v", doc.Redis, doc.Rows[0])
	}
}
