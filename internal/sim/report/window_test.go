package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/market"
)

// sampleSweep is a 5x5 sweep at two round trips in both client forms,
// watch and fine each time.
func sampleSweep() Sweep {
	five := sim.Scenario{Listers: 5, Buyers: 5}
	sw := Sweep{Env: output.Env{Redis: output.Redis{Mode: "redis-server", Version: "7.0.15"}}, Scenario: "5x5", DurationS: 10, Seed: 1, Pick: 10}
	for i, rtt := range []float64{0, 1} {
		for j, client := range []string{"lean", "book"} {
			retries := int64(1_000 * (1 + i + 3*j))
			w := time.Duration(100*(1+i)*(1+2*j)) * time.Microsecond
			for _, r := range []Row{
				cell(five, market.Watch, 40_000, 1_000, retries, w),
				cell(five, market.Fine, 30_000, 20_000, 0, 0),
			} {
				sw.Points = append(sw.Points, Point{Client: client, RTTConfiguredMs: rtt, RTTMs: rtt + 0.05, Row: r})
			}
		}
	}
	return sw
}

func TestSweepTables(t *testing.T) {
	sw := sampleSweep()
	var b bytes.Buffer
	if err := RenderSweep(&b, "table", sw); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for line := range strings.Lines(out) {
		if n := len([]rune(strings.TrimRight(line, "\n"))); n > 100 {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
	// Book form at 1 ms: 5,000 retries for 1,000 bought; w = 600 µs;
	// λ = (40,000 + 1,000·4/5)/10 s = 4,080/s; λ·w = 2.448; e^(−2.448) =
	// 8.6%; measured 1,000/6,000 = 17%; error 8.65/16.7 − 1 = −48%.
	for _, want := range []string{"│ 1ms (1.05ms) │ book   │        5.00 │ 600µs │  4,080 │ 2.45 │ 17% │     8.6% │  -48% │",
		"│ 0 (50µs)     │ lean   │      100 │    2,000 │    ok │", "WATCH against the model"} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := RenderSweep(&b, "markdown", sw); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| rtt (measured) | client | retries/buy |") {
		t.Errorf("markdown header:\n%s", b.String())
	}
}

func TestSweepCSVAndJSON(t *testing.T) {
	sw := sampleSweep()
	var b bytes.Buffer
	if err := RenderSweep(&b, "csv", sw); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(sw.Points) || len(recs[0]) != len(SweepCSVHeader) {
		t.Fatalf("%d records of %d fields", len(recs), len(recs[0]))
	}
	if got := recs[1]; got[0] != "lean" || got[4] != "watch" || got[11] == "" || recs[2][11] != "" {
		t.Errorf("first records %q, %q", recs[1], recs[2])
	}
	b.Reset()
	if err := RenderSweep(&b, "json", sw); err != nil {
		t.Fatal(err)
	}
	var back Sweep
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Points) != len(sw.Points) || back.Points[6].Client != "book" || back.Points[6].RTTMs != 1.05 ||
		back.Points[6].Conflict == nil || back.Points[6].Strategy != "watch" {
		t.Errorf("points read back: %+v", back.Points[6])
	}
	var raw struct {
		Points []map[string]json.RawMessage `json:"points"`
	}
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"client", "rtt_ms", "rtt_configured_ms", "strategy", "bought_per_s", "conflict"} {
		if _, ok := raw.Points[0][k]; !ok {
			t.Errorf("point lacks %q", k)
		}
	}
}

func TestWriteSweep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "w")
	files, err := WriteSweep(dir, sampleSweep())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"window.md", "window.csv", "window.json", ChartWindowRetries, ChartWindowBought}
	if strings.Join(files, ",") != strings.Join(want, ",") {
		t.Fatalf("files %v, want %v", files, want)
	}
	svg, err := os.ReadFile(filepath.Join(dir, ChartWindowRetries))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "watch, book: measured", "watch, lean: model"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("retries chart lacks %q", want)
		}
	}
	// Two clients at two round trips: retries measured and modelled for
	// each client, bought per second of watch and fine for each.
	for _, f := range []string{ChartWindowRetries, ChartWindowBought} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got := svgClasses(t, f, data)
		if got["line"] != 4 || got["point"] != 8 || got["legend-entry"] != 4 {
			t.Errorf("%s: %d lines, %d points, %d legend entries; want 4, 8, 4", f, got["line"], got["point"], got["legend-entry"])
		}
	}
}
