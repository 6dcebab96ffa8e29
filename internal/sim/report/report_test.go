package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/report/chart"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/testsupport/jsonkeys"
	"github.com/lockmarket/lockmarket/market"
)

// sample is a document of three cells: one the book has (1x1 watch), one
// it does not (1x1 lua) and one whose audit failed.
func sample() Document {
	wait := &latency.Histogram{}
	for i := 1; i <= 100; i++ {
		wait.Record(time.Duration(i) * time.Millisecond)
	}
	watch := sim.Result{
		Scenario: sim.Scenario{Listers: 1, Buyers: 1}, Strategy: market.Watch,
		Duration: 6 * time.Second, Elapsed: 6 * time.Second,
		Listed: 1000, Bought: 100, Retries: 250, Wait: wait,
		Failed: sim.Failures{ListingNotFound: 3, Contended: 1},
	}
	lua := sim.Result{
		Scenario: sim.Scenario{Listers: 1, Buyers: 1}, Strategy: market.Lua,
		Duration: 6 * time.Second, Elapsed: 6 * time.Second, Listed: 5, Wait: &latency.Histogram{},
	}
	broken := watch
	broken.Scenario = sim.Scenario{Listers: 5, Buyers: 5}
	broken.Audit.ItemMisplaced = 2
	broken.Audit.Details = []string{"item x is in 2 places"}
	return Document{
		Env:       output.Env{Redis: output.Redis{Mode: "redis-server", Version: "7.0.15"}},
		DurationS: 6, Seed: 1, Pick: 10,
		Rows: []Row{FromResult(watch), FromResult(lua), FromResult(broken)},
	}
}

func TestFromResult(t *testing.T) {
	doc := sample()
	r := doc.Rows[0]
	if r.Scenario != "1x1" || r.Strategy != "watch" || r.FailedPurchases != 4 || r.OpsPerS != 183.333 {
		t.Errorf("row = %+v", r)
	}
	if r.RetriesPerPurchase == nil || *r.RetriesPerPurchase != 2.5 {
		t.Errorf("retries per purchase = %v, want 2.5", r.RetriesPerPurchase)
	}
	if r.AvgWaitMs != 50.5 || r.P50WaitMs < 49.6 || r.P50WaitMs > 50.4 || r.P99WaitMs < 98.2 || r.P99WaitMs > 99.8 {
		t.Errorf("waits: avg %v p50 %v p99 %v", r.AvgWaitMs, r.P50WaitMs, r.P99WaitMs)
	}
	if r.Book == nil || r.Book.Listed != 145000 || r.Book.AvgWaitMs != 14 || r.Book.Published["avg_wait_ms"] != "14" {
		t.Errorf("book = %+v", r.Book)
	}
	if lua := doc.Rows[1]; lua.Book != nil || lua.RetriesPerPurchase != nil {
		t.Errorf("lua 1x1: book %v retries/purchase %v, want neither", lua.Book, lua.RetriesPerPurchase)
	}
	if doc.Violations() != 2 {
		t.Errorf("violations = %d, want 2", doc.Violations())
	}
}

func TestTableAndMarkdown(t *testing.T) {
	tests := []struct {
		format string
		wide   bool
		header func(out string) string // the line holding the column names
	}{
		{"table", true, func(out string) string {
			for line := range strings.Lines(out) {
				if strings.Contains(line, "scenario") {
					return line
				}
			}
			return ""
		}},
		{"markdown", false, func(out string) string { line, _, _ := strings.Cut(out, "\n"); return line }},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, tc.format, sample(), tc.wide); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			header := tc.header(out)
			last := -1
			for _, col := range Columns {
				i := strings.Index(header, col)
				if i <= last {
					t.Errorf("column %q missing or out of order in %q", col, header)
				}
				last = i
			}
			for _, want := range []string{
				"1,000 (14,500)", // listed, book 145,000 scaled to 6 s
				"100 (2,700)",    // bought
				"250 (8,000)",    // retries
				"50.5ms (14ms)",  // mean wait, book's not scaled
				"2.50",           // retries per purchase
				"FAIL 2 (misplaced 2)",
				"redis-server 7.0.15",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(header, "Scenario") || strings.Contains(header, "SCENARIO") {
				t.Errorf("header was reformatted: %q", header)
			}
		})
	}
}

// TestNarrowTable: the default table keeps our figures and the book's,
// the book's on a line of their own below ours.
func TestNarrowTable(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, "table", sample(), false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(out, "\n")
	// The header's two lines hold the columns in order.
	var header string
	for i, line := range lines {
		if strings.Contains(line, "scenario") {
			header = line + "\n" + lines[i+1]
			break
		}
	}
	last := -1
	for _, col := range NarrowColumns {
		first, _, _ := strings.Cut(col, "\n")
		i := strings.Index(header, first)
		if i <= last {
			t.Errorf("column %q missing or out of order in %q", col, header)
		}
		last = i
	}
	row := func(cells ...string) string {
		for _, line := range lines {
			fields := strings.FieldsFunc(line, func(r rune) bool { return r == '│' })
			var got []string
			for _, f := range fields {
				got = append(got, strings.TrimSpace(f))
			}
			if slices.Equal(got, cells) {
				return line
			}
		}
		t.Errorf("no row %q in:\n%s", cells, out)
		return ""
	}
	// 1x1 watch, and the book's row below it: 145,000 listed, 27,000
	// bought and 80,000 retries scaled to 6 s, the wait as published.
	ours := row("1x1", "watch", "1,000", "100", "4", "250", "50.5ms", "98.8ms", "183", "ok")
	book := row("", "book", "14,500", "2,700", "", "8,000", "14ms", "", "", "")
	if ours != "" && book != "" && slices.Index(lines, book) != slices.Index(lines, ours)+1 {
		t.Errorf("the book's row is not below ours:\n%s", out)
	}
	row("5x5", "watch", "1,000", "100", "4", "250", "50.5ms", "98.8ms", "183", "FAIL 2")
	row("1x1", "lua", "5", "0", "0", "0", "-", "-", "1", "ok")
	for _, want := range []string{"redis-server 7.0.15", "book: the book's figures", "-wide"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCSV(t *testing.T) {
	var buf bytes.Buffer
	if err := CSV(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want header + 3", len(recs))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, name := range []string{"scenario", "strategy", "listed", "bought", "failed_purchases", "retries",
		"lock_waits", "avg_wait_ms", "p50_wait_ms", "p99_wait_ms", "ops_per_s", "violations", "book_listed"} {
		if _, ok := col[name]; !ok {
			t.Errorf("no column %q", name)
		}
	}
	if got := recs[1][col["book_listed"]]; got != "145000" {
		t.Errorf("book_listed = %q", got)
	}
	if got := recs[2][col["book_listed"]]; got != "" {
		t.Errorf("book_listed of a cell the book lacks = %q, want empty", got)
	}
	if got := recs[3][col["violations"]]; got != "2" {
		t.Errorf("violations = %q", got)
	}
}

func TestJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	redis := doc["redis"].(map[string]any)
	if redis["mode"] != "redis-server" || redis["version"] != "7.0.15" || doc["duration_s"] != 6.0 {
		t.Errorf("top level = %v", doc)
	}
	rows := doc["rows"].([]any)
	row := rows[0].(map[string]any)
	for _, k := range []string{"scenario", "listers", "buyers", "strategy", "listed", "bought",
		"failed_purchases", "retries", "lock_waits", "avg_wait_ms", "p50_wait_ms", "p99_wait_ms",
		"ops_per_s", "violations", "book"} {
		if _, ok := row[k]; !ok {
			t.Errorf("row lacks %q", k)
		}
	}
	book := row["book"].(map[string]any)
	for _, k := range []string{"listed", "bought", "retries", "avg_wait_ms"} {
		if _, ok := book[k]; !ok {
			t.Errorf("book lacks %q", k)
		}
	}
	if _, ok := rows[1].(map[string]any)["book"]; ok {
		t.Error("a cell the book lacks has a book field")
	}
}

func TestRenderUnknownFormat(t *testing.T) {
	if err := Render(&bytes.Buffer{}, "xml", sample(), false); err == nil {
		t.Fatal("no error for format xml")
	}
}

func TestWriteAll(t *testing.T) {
	dir := t.TempDir()
	doc := sample()
	files, err := WriteAll(dir, doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"results.md", "results.csv", "results.json", ChartBought, ChartRetries,
		ChartMeanWait, ChartP99Wait, ChartBookBought, ChartBookMeanWait}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("files = %v, want %v", files, want)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".svg") && !bytes.Contains(data, []byte("<svg")) {
			t.Errorf("%s is not SVG", f)
		}
		if !strings.HasSuffix(f, ".svg") {
			continue
		}
		// Scenarios 1x1 and 5x5, strategies watch and lua: lua bought
		// nothing in 1x1 and did not run in 5x5, so only watch has bars.
		// The book has both watch cells.
		want := map[string]int{"legend-entry": 2, "bar": 2}
		if f == ChartRetries {
			want["bar"] = 2 // watch only: lua never retries
		}
		if f == ChartBookBought || f == ChartBookMeanWait {
			want["bar"] = 4
		}
		got := svgClasses(t, f, data)
		for class, n := range want {
			if got[class] != n {
				t.Errorf("%s: %d elements of class %s, want %d", f, got[class], class, n)
			}
		}
	}
	// Charts with only zeros, and with a spread that needs a log axis.
	for name, vals := range map[string][]float64{"zeros": {0, 0}, "spread": {0, 0.5, 20000}} {
		g := chart.Bars{Title: "t", XLabel: "x", YLabel: "y", Groups: []string{"a", "b"},
			Series: []chart.Series{{Name: "s", Values: vals[:2]}, {Name: "u", Values: vals[len(vals)-2:]}}}
		if _, err := writeCharts(dir, []namedChart{{name + ".svg", g}}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// svgClasses checks that data is a well-formed XML document whose root is
// an svg element, and counts its elements by class.
func svgClasses(t *testing.T, name string, data []byte) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	classes := map[string]int{}
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed: %v", name, err)
		}
		if el, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = el.Name.Local
			}
			for _, a := range el.Attr {
				if a.Name.Local == "class" {
					classes[a.Value]++
				}
			}
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q, want svg", name, root)
	}
	return classes
}

// TestBookScaling: the book is scaled to the configured duration, not to
// a measured time a few milliseconds longer; an interrupted cell is
// scaled to its measured time.
func TestBookScaling(t *testing.T) {
	r := sample().Rows[0] // 1x1 watch: book listed 145,000 per 60 s
	r.ElapsedS = 6.02
	if got := cells(r, 6)[2]; got != "1,000 (14,500)" {
		t.Errorf("listed = %q, want 1,000 (14,500)", got)
	}
	r.Interrupted, r.ElapsedS = true, 3
	if got := cells(r, 6)[2]; got != "1,000 (7,250)" {
		t.Errorf("interrupted: listed = %q, want 1,000 (7,250)", got)
	}
}

// TestResources: a run with -markets or -prefill gains a second table
// with the memory and CPU figures; a plain run's views do not change.
func TestResources(t *testing.T) {
	res := sim.Result{
		Scenario: sim.Scenario{Listers: 5, Buyers: 5}, Strategy: market.Lua,
		Duration: 10 * time.Second, Elapsed: 10 * time.Second, Listed: 10, Bought: 5, Wait: &latency.Histogram{},
		Markets: []string{"a", "b"}, Prefill: 1000, PrefillTime: 1500 * time.Millisecond,
		MarketBytes: 2 * 1000 * 100, ClientRSS: 64 << 20, ClientCPU: 5 * time.Second,
	}
	res.Server.Before = probe.ServerStats{UsedMemory: 1 << 20, CPU: time.Second, Commands: 10, Masters: 1, OK: true}
	res.Server.Prefilled = probe.ServerStats{UsedMemory: 1<<20 + 2*1000*170, CPU: 2 * time.Second, Commands: 100, Masters: 1, OK: true}
	res.Server.After = probe.ServerStats{UsedMemory: 4 << 20, CPU: 9 * time.Second, Commands: 100_100, Masters: 1, OK: true}
	row := FromResult(res)
	checks := []struct {
		name      string
		got, want any
	}{
		{"markets", row.Markets, 2},
		{"bytes per listing", row.BytesPerListing, 170.0},
		{"redis cpu", row.RedisCPUS, 7.0},
		{"redis commands", row.RedisCommands, int64(100_000)},
		{"client cpu", row.ClientCPUS, 5.0},
		{"label", row.Label(), "5x5 x2 markets +1,000"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
	withRes := Document{Env: output.Env{Redis: output.Redis{Mode: "redis-server"}}, DurationS: 10, Rows: []Row{row}}
	plain := sample()
	for _, tc := range []struct {
		name string
		doc  Document
		want bool
	}{{"with -prefill", withRes, true}, {"plain", plain, false}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, format := range []string{"table", "markdown"} {
				var b bytes.Buffer
				if err := Render(&b, format, tc.doc, false); err != nil {
					t.Fatal(err)
				}
				if got := strings.Contains(b.String(), "B/listing"); got != tc.want {
					t.Errorf("%s: resource table shown %v, want %v:\n%s", format, got, tc.want, b.String())
				}
				if tc.want && !strings.Contains(b.String(), "| 5x5 | lua | 2 | 1,000 | 1.5s | 1.3 MiB | 170 | 100 | 64.0 MiB | 50% | 70% | 10,000 |") && format == "markdown" {
					t.Errorf("markdown resource row differs:\n%s", b.String())
				}
			}
		})
	}
}

// TestDecode reads a document of the current schema back unchanged, and
// the committed results of earlier versions under their old keys, with
// every figure carried over.
func TestDecode(t *testing.T) {
	t.Run("current", func(t *testing.T) {
		var buf bytes.Buffer
		want := sample()
		if err := JSON(&buf, want); err != nil {
			t.Fatal(err)
		}
		got, err := Decode(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decoded\n%+v\nwant\n%+v", got, want)
		}
	})
	for _, path := range []string{"../../../results/repro/results.json", "../../../results/scale/ceiling/sim.json"} {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var old struct {
				Rows []struct {
					Failures map[string]int64 `json:"failures"`
					Book     *struct {
						AvgWait     float64           `json:"avg_wait"`
						UpperBounds []string          `json:"upper_bounds"`
						Published   map[string]string `json:"published"`
					} `json:"book"`
				} `json:"rows"`
			}
			if err := json.Unmarshal(data, &old); err != nil {
				t.Fatal(err)
			}
			doc, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Rows) == 0 || len(doc.Rows) != len(old.Rows) || doc.Redis.Version == "" {
				t.Fatalf("%d rows of %d, redis %+v", len(doc.Rows), len(old.Rows), doc.Redis)
			}
			books := 0
			for i, o := range old.Rows {
				r := doc.Rows[i]
				gone, ok := o.Failures["listing_gone"]
				if !ok || r.Failures.ListingNotFound != gone {
					t.Errorf("row %d: listing_not_found %d, old listing_gone %d (present %v)", i, r.Failures.ListingNotFound, gone, ok)
				}
				if o.Book == nil {
					continue
				}
				books++
				b := r.Book
				if b.AvgWaitMs != o.Book.AvgWait || b.AvgWaitMs == 0 {
					t.Errorf("row %d: avg_wait_ms %v, old avg_wait %v", i, b.AvgWaitMs, o.Book.AvgWait)
				}
				if want := strings.TrimSuffix(o.Book.Published["avg_wait"], "ms"); b.Published["avg_wait_ms"] != want || want == "" {
					t.Errorf("row %d: published avg_wait_ms %q, want %q", i, b.Published["avg_wait_ms"], want)
				}
				if _, ok := b.Published["avg_wait"]; ok {
					t.Errorf("row %d: published keeps avg_wait", i)
				}
				if len(b.UpperBounds) != len(o.Book.UpperBounds) || slices.Contains(b.UpperBounds, "avg_wait") {
					t.Errorf("row %d: upper bounds %q, old %q", i, b.UpperBounds, o.Book.UpperBounds)
				}
			}
			if books == 0 {
				t.Error("no row with the book's figures")
			}
			var out bytes.Buffer
			if err := JSON(&out, doc); err != nil {
				t.Fatal(err)
			}
			jsonkeys.Check(t, path+" rendered again", out.Bytes())
		})
	}
}

// TestTableWidth renders the default table of committed runs (60 s per
// cell, six- and seven-digit counts; a run with 10^6 prefilled listings
// and one of three markets per cell, which add the resource table) and of
// a run at the largest counts of six digits, with failed audits: every
// line fits output.Width columns. The wide table is measured and logged.
func TestTableWidth(t *testing.T) {
	var docs []Document
	for _, path := range []string{"../../../results/repro/results.json", "../../../results/scale/prefill-1000000/results.json",
		"../../../results/cluster/masters-3/results.json"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	if r := docs[0].Rows[0]; r.Listed < 100_000 {
		t.Fatalf("%s %s listed %d: not a six-digit run", r.Scenario, r.Strategy, r.Listed)
	}
	if !docs[1].HasResources() || !docs[2].HasResources() {
		t.Fatal("the prefill and markets runs have no resource table")
	}
	big := sample()
	for i := range big.Rows {
		r := &big.Rows[i]
		r.Listed, r.Bought, r.FailedPurchases, r.Retries, r.OpsPerS = 999_999, 999_999, 999_999, 999_999, 99_999
		r.AvgWaitMs, r.P99WaitMs = 999.9, 9999
		r.Violations = 99
		r.Prefill, r.Markets, r.BytesPerListing = 1_000_000, 64, 999
		// 9,999 MiB, 16 cores busy for 60 s, 999,999 commands per second.
		r.ClientRSSBytes, r.ClientCPUS, r.RedisCPUS, r.RedisCommands, r.ElapsedS = 9_999<<20, 960, 960, 999_999*60, 60
	}
	big.DurationS = 60
	docs = append(docs, big)
	for i, doc := range docs {
		var narrow, wide bytes.Buffer
		if err := Render(&narrow, "table", doc, false); err != nil {
			t.Fatal(err)
		}
		if err := Render(&wide, "table", doc, true); err != nil {
			t.Fatal(err)
		}
		if w := output.Widest(narrow.String()); w > output.Width {
			t.Errorf("document %d: the default table is %d columns wide, more than %d:\n%s", i, w, output.Width, narrow.String())
		}
		t.Logf("document %d: default table %d columns, -wide %d", i, output.Widest(narrow.String()), output.Widest(wide.String()))
	}
}
