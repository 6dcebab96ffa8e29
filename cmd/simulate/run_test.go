package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/measure"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

func TestParseRunFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // substring of stderr; "" means success
	}{
		{"defaults", nil, ""},
		{"all flags", []string{"-strategies", "lua,fine", "-scenarios", "50x50,1x1", "-duration", "2s",
			"-seed", "7", "-pick", "3", "-format", "json", "-out", "x", "-redis", "127.0.0.1:1"}, ""},
		{"unknown strategy", []string{"-strategies", "watch,optimistic"}, `unknown strategy "optimistic"`},
		{"empty strategies", []string{"-strategies", ","}, "no strategy"},
		{"bad scenario syntax", []string{"-scenarios", "5y5"}, "5y5"},
		{"zero listers", []string{"-scenarios", "0x5"}, "between 1 and"},
		{"too many buyers", []string{"-scenarios", "1x100000"}, "between 1 and"},
		{"negative duration", []string{"-duration", "-1s"}, "must be positive"},
		{"zero duration", []string{"-duration", "0"}, "must be positive"},
		{"bad duration", []string{"-duration", "soon"}, "invalid value"},
		{"pick zero", []string{"-pick", "0"}, "-pick 0"},
		{"unknown format", []string{"-format", "xml"}, `-format "xml"`},
		{"unknown flag", []string{"-listers", "5"}, "flag provided but not defined"},
		{"stray argument", []string{"-duration", "1s", "extra"}, `unexpected argument "extra"`},
		{"markets and prefill", []string{"-markets", "3", "-prefill", "100000"}, ""},
		{"zero markets", []string{"-markets", "0"}, "-markets 0"},
		{"too many markets", []string{"-markets", "65"}, "-markets 65"},
		{"negative prefill", []string{"-prefill", "-1"}, "-prefill -1"},
		{"prefill too large", []string{"-prefill", "10000001"}, "-prefill 10000001"},
		{"prefill not a number", []string{"-prefill", "many"}, "invalid value"},
		{"book client with a round trip", []string{"-client", "book", "-rtt", "1ms"}, ""},
		{"profile", []string{"-profile", "book"}, ""},
		{"unknown client", []string{"-client", "python"}, `-client "python"`},
		{"negative rtt", []string{"-rtt", "-1ms"}, "-rtt -1ms"},
		{"rtt too large", []string{"-rtt", "2s"}, "-rtt 2s"},
		{"rtt not a duration", []string{"-rtt", "fast"}, "invalid value"},
		{"unknown profile", []string{"-profile", "python"}, `-profile "python"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseRunFlags(tc.args, &stderr)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("error %v; stderr: %s", err, stderr.String())
				}
				return
			}
			if !errors.Is(err, output.ErrUsage) {
				t.Fatalf("err = %v, want a usage error (options %+v)", err, o)
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.wantErr)
			}
		})
	}
	t.Run("parsed values", func(t *testing.T) {
		o, err := parseRunFlags([]string{"-strategies", "lua,fine,lua", "-scenarios", "50x50,1x1", "-pick", "3"}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Strategies) != 2 || o.Strategies[0] != market.Lua || o.Strategies[1] != market.Fine {
			t.Errorf("strategies = %v", o.Strategies)
		}
		if len(o.Scenarios) != 2 || o.Scenarios[0] != (sim.Scenario{Listers: 50, Buyers: 50}) {
			t.Errorf("scenarios = %v", o.Scenarios)
		}
		if o.Pick != 3 || o.format != "table" || o.redis != "auto" || o.Markets != 1 || o.Prefill != 0 {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("profile and overrides", func(t *testing.T) {
		book, _ := measure.LookupProfile("book")
		if book.Jitter <= 0 {
			t.Fatalf("the book profile has no jitter: %+v", book)
		}
		tests := []struct {
			args        []string
			client      markettrace.ClientForm
			rtt, jitter time.Duration
		}{
			{nil, markettrace.LeanClient, 0, 0},
			{[]string{"-profile", "book"}, book.Client, book.RTT, book.Jitter},
			{[]string{"-profile", "book", "-rtt", "0"}, book.Client, 0, book.Jitter},
			{[]string{"-profile", "book", "-jitter", "0"}, book.Client, book.RTT, 0},
			{[]string{"-rtt", "2ms", "-profile", "book", "-client", "lean"}, markettrace.LeanClient, 2 * time.Millisecond, book.Jitter},
			{[]string{"-jitter", "1ms"}, markettrace.LeanClient, 0, time.Millisecond},
		}
		for _, tc := range tests {
			o, err := parseRunFlags(tc.args, &bytes.Buffer{})
			if err != nil {
				t.Fatalf("%q: %v", tc.args, err)
			}
			if o.Client != tc.client || o.RTT != tc.rtt || o.Jitter != tc.jitter {
				t.Errorf("%q: client %s rtt %v jitter %v, want %s %v %v", tc.args, o.Client, o.RTT, o.Jitter, tc.client, tc.rtt, tc.jitter)
			}
		}
	})
	t.Run("help", func(t *testing.T) {
		var stderr bytes.Buffer
		_, err := parseRunFlags([]string{"-h"}, &stderr)
		if !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("err = %v, want flag.ErrHelp", err)
		}
		for _, want := range []string{"-strategies", "watch,coarse,fine,lua", "1x1,5x1,5x5", "Examples:", "-client", "-rtt", "-profile", "book ("} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("help lacks %q", want)
			}
		}
	})
}

// TestExitCodes runs the command in a child process (this test binary,
// re-entered through TestHelperMain) and checks its exit status.
func TestExitCodes(t *testing.T) {
	t.Parallel() // a process of its own for each case
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"-strategies", "nope"}, 2},
		{[]string{"-scenarios", "5y5"}, 2},
		{[]string{"-duration", "-3s"}, 2},
		{[]string{"-client", "python"}, 2},
		{[]string{"-rtt", "-1ms"}, 2},
		{[]string{"-rtt", "5s"}, 2},
		{[]string{"-jitter", "-1ms"}, 2},
		{[]string{"-profile", "nope"}, 2},
		{[]string{"window", "-rtts", "-1ms"}, 2},
		{[]string{"window", "-clients", "python"}, 2},
		{[]string{"bogus-subcommand"}, 2},
		{[]string{"-h"}, 0},
		{[]string{"help"}, 0},
		{[]string{"help", "gallery"}, 0},
		{[]string{"help", "bogus-subcommand"}, 2},
		{[]string{"-version"}, 0},
		{[]string{"gallery", "-format", "xml"}, 2},
		{[]string{"-redis", "nowhere"}, 2},
		{[]string{"gallery", "-redis", "redis://%zz"}, 2},
		{[]string{"window", "-redis", "redis://%zz"}, 2},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperMain$", "--"}, tc.args...)...)
			cmd.Env = append(os.Environ(), "SIMULATE_HELPER_MAIN=1")
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tc.code, out)
			}
		})
	}
}

// TestHelperMain is not a test: TestExitCodes runs it in a child process
// to call main with the arguments after "--".
func TestHelperMain(t *testing.T) {
	if os.Getenv("SIMULATE_HELPER_MAIN") != "1" {
		t.Skip("helper process for TestExitCodes")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Args = append([]string{"simulate"}, args...)
	main()
	os.Exit(0)
}

// TestRunMiniredisJSON runs every book cell for a moment on the embedded
// miniredis chosen by "-redis auto" when no redis-server is on PATH, and
// checks the JSON document.
func TestRunMiniredisJSON(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("REDIS_URL", "")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-duration", "150ms", "-format", "json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "miniredis") || !strings.Contains(stderr.String(), "illustrative") {
		t.Errorf("stderr does not say miniredis is illustrative:\n%s", stderr.String())
	}
	// The first screen says what is about to be measured, and for how
	// long.
	first := "simulate: about to measure purchases and listings of scenarios"
	if i := strings.Index(stderr.String(), first); i < 0 ||
		!strings.Contains(stderr.String()[i:], "150ms each") {
		t.Errorf("stderr does not begin with what it measures and for how long:\n%s", stderr.String())
	}
	var doc report.Document
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if doc.Redis.Mode != "miniredis" || !doc.Illustrative || doc.DurationS != 0.15 {
		t.Errorf("document header: %+v", doc)
	}
	if len(doc.Rows) != 12 {
		t.Fatalf("%d rows, want 12", len(doc.Rows))
	}
	books := 0
	for _, r := range doc.Rows {
		if r.Violations != 0 {
			t.Errorf("%s %s: %d violations: %v", r.Scenario, r.Strategy, r.Violations, r.AuditDetails)
		}
		if r.Listed == 0 {
			t.Errorf("%s %s: nothing listed", r.Scenario, r.Strategy)
		}
		if r.Book != nil {
			books++
		}
	}
	if books != 10 {
		t.Errorf("%d rows carry the book's figures, want 10", books)
	}
	// Every field the design names, by its JSON name.
	var raw struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scenario", "listers", "buyers", "strategy", "listed", "bought",
		"failed_purchases", "retries", "lock_waits", "avg_wait_ms", "p50_wait_ms", "p99_wait_ms",
		"ops_per_s", "violations"} {
		if _, ok := raw.Rows[0][k]; !ok {
			t.Errorf("row lacks %q", k)
		}
	}
}

// TestRunRealServerWithOut runs two cells on a real redis-server, prints
// the wide table and writes the -out directory.
func TestRunRealServerWithOut(t *testing.T) {
	t.Parallel() // a server or a temporary directory of its own
	b := redistest.Real(t)
	dir := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"run", "-redis", b.Addr(), "-scenarios", "2x2",
		"-strategies", "fine,lua", "-duration", "300ms", "-wide", "-out", dir}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"listed (book)", "2x2", "fine", "lua", "ok"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "FAIL") {
		t.Errorf("audit failed:\n%s", stdout.String())
	}
	if got := strings.Count(stderr.String(), "audit ok"); got != 10 {
		t.Errorf("%d progress lines say audit ok, want 10 (2 cells in 5 slices each):\n%s", got, stderr.String())
	}
	for _, f := range []string{"results.md", "results.csv", "results.json", report.ChartBought, report.ChartP99Wait} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if n, err := b.Client.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Errorf("%d keys left in Redis (%v)", n, err)
	}
}

// TestRunBookClientThroughProxy runs the book's command sequences through
// the delay proxy on a real server: every cell audits clean, and the
// document says which client ran and what round trip was asked for and
// measured.
func TestRunBookClientThroughProxy(t *testing.T) {
	t.Parallel() // a server or a temporary directory of its own
	b := redistest.Real(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-redis", b.Addr(), "-scenarios", "2x2", "-client", "book",
		"-rtt", "1ms", "-jitter", "250us", "-duration", "300ms", "-format", "json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	var doc report.Document
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if doc.Client != "book" || doc.RTTConfiguredMs != 1 || doc.JitterMs != 0.25 || doc.RTTMs < 1 {
		t.Errorf("client %q, rtt_configured_ms %v, jitter_ms %v, rtt_ms %v; want book, 1, 0.25 and at least 1",
			doc.Client, doc.RTTConfiguredMs, doc.JitterMs, doc.RTTMs)
	}
	if !strings.Contains(stderr.String(), "client book, round trip") || !strings.Contains(stderr.String(), "proxy adding 1ms + exp(mean 250µs)") {
		t.Errorf("stderr does not give the link:\n%s", stderr.String())
	}
	if len(doc.Rows) != 4 {
		t.Fatalf("%d rows, want 4", len(doc.Rows))
	}
	for _, r := range doc.Rows {
		if r.Violations != 0 || r.Listed == 0 {
			t.Errorf("%s %s: listed %d, %d violations: %v", r.Scenario, r.Strategy, r.Listed, r.Violations, r.AuditDetails)
		}
	}
	if n, err := b.Client.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Errorf("%d keys left in Redis (%v)", n, err)
	}
}

// TestRunPrefill runs prefilled cells of two markets on a real server and
// on miniredis: the table gains the memory and CPU table, with figures on
// the real server and dashes on miniredis.
func TestRunPrefill(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		if b.Mini != nil {
			t.Setenv("PATH", t.TempDir()) // "auto" falls back to miniredis
			t.Setenv("REDIS_URL", "")
		}
		redisArg := "auto"
		if b.Mini == nil {
			redisArg = b.Addr()
		}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"run", "-redis", redisArg, "-scenarios", "1x1",
			"-strategies", "lua", "-duration", "200ms", "-prefill", "1000", "-markets", "2", "-format", "markdown"}, &stdout, &stderr)
		if err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
		out := stdout.String()
		for _, want := range []string{"| B/listing |", "| 1x1 | lua | 2 | 1,000 |", "client RSS"} {
			if !strings.Contains(out, want) {
				t.Errorf("markdown lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "FAIL") {
			t.Errorf("audit failed:\n%s", out)
		}
		if b.Mini == nil && strings.Contains(out, "| - | - | - |") {
			t.Errorf("a real server left memory figures empty:\n%s", out)
		}
	})
}

// TestRunInterrupted: a cancelled context stops after the current cell,
// reports what was measured, and says so.
func TestRunInterrupted(t *testing.T) {
	t.Parallel() // a server or a temporary directory of its own
	b := redistest.Real(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout bytes.Buffer
	stderr := &cancelWriter{cancel: cancel, after: "[1/"}
	err := run(ctx, []string{"-redis", b.Addr(), "-duration", "1h", "-format", "csv"}, &stdout, stderr)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v, want interrupted", err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("csv has %d lines, want header + the one cell measured:\n%s", len(lines), stdout.String())
	}
}

// cancelWriter cancels a context once a given text has been written to it.
type cancelWriter struct {
	bytes.Buffer
	cancel func()
	after  string
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if strings.Contains(w.Buffer.String(), w.after) {
		w.cancel()
	}
	return n, err
}

// TestReportRoundTrip renders a saved run again: the JSON written by
// "run -out" read back by "report" gives the same table.
func TestReportRoundTrip(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("REDIS_URL", "")
	dir := t.TempDir()
	var table1, table2, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-scenarios", "1x1", "-strategies", "lua", "-duration", "100ms", "-out", dir},
		&table1, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	out2 := filepath.Join(dir, "again")
	if err := run(context.Background(), []string{"report", "-in", filepath.Join(dir, "results.json"), "-out", out2},
		&table2, &stderr); err != nil {
		t.Fatalf("report: %v\n%s", err, stderr.String())
	}
	if table1.String() != table2.String() {
		t.Errorf("tables differ:\n%s\n%s", table1.String(), table2.String())
	}
	if _, err := os.Stat(filepath.Join(out2, report.ChartBought)); err != nil {
		t.Error(err)
	}
	for _, args := range [][]string{{"report"}, {"report", "-in", "x.json", "-format", "xml"}, {"report", "-in", "a", "b"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, output.ErrUsage) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}

// TestRunCluster runs every strategy on a three-master Redis Cluster given
// as an address list, three markets per cell, one on each master: each
// market lives in one slot (its hash tag), and its keys are deleted from
// whichever master holds them. It runs the lean forms, then the book's
// with every node behind the delay proxy.
func TestRunCluster(t *testing.T) {
	t.Parallel() // a cluster of its own
	client, cl := redistest.Cluster(t, 3)
	for _, extra := range [][]string{nil, {"-client", "book", "-rtt", "1ms"}} {
		t.Run(strings.Join(append([]string{"lean"}, extra...), " "), func(t *testing.T) {
			runCluster(t, client, cl.Addrs(), extra)
		})
	}
}

func runCluster(t *testing.T, client *redis.ClusterClient, addrs, extra []string) {
	var stdout, stderr bytes.Buffer
	args := append([]string{"-redis", strings.Join(addrs, ","), "-scenarios", "2x2",
		"-strategies", "watch,coarse,fine,lua", "-markets", "3", "-duration", "300ms", "-format", "json"}, extra...)
	err := run(context.Background(), args, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	var doc report.Document
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Redis.Mode != "cluster" || len(doc.Rows) != 4 {
		t.Fatalf("mode %q, %d rows", doc.Redis.Mode, len(doc.Rows))
	}
	if extra != nil && (doc.Client != "book" || doc.RTTConfiguredMs != 1 || doc.RTTMs < 1) {
		t.Errorf("client %q, rtt %v ms measured, %v configured; want book through a 1 ms proxy",
			doc.Client, doc.RTTMs, doc.RTTConfiguredMs)
	}
	for _, r := range doc.Rows {
		if r.Violations != 0 || r.Bought == 0 {
			t.Errorf("%s %s: bought %d, violations %d %v", r.Scenario, r.Strategy, r.Bought, r.Violations, r.AuditDetails)
		}
		if r.Markets != 3 || r.RedisMasters != 3 {
			t.Errorf("%s %s: %d markets, figures of %d masters; want 3 and 3", r.Scenario, r.Strategy, r.Markets, r.RedisMasters)
		}
	}
	err = client.ForEachMaster(context.Background(), func(ctx context.Context, node *redis.Client) error {
		if n, err := node.DBSize(ctx).Result(); err != nil || n != 0 {
			t.Errorf("%s: %d keys left (%v)", node.Options().Addr, n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
