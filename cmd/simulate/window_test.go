package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

func TestParseWindowFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // substring of stderr; "" means success
	}{
		{"defaults", nil, ""},
		{"all flags", []string{"-scenario", "5x1", "-rtts", "0,250us,1ms", "-clients", "book", "-strategies", "watch,fine",
			"-duration", "2s", "-seed", "3", "-pick", "5", "-format", "csv", "-out", "x", "-redis", "127.0.0.1:1"}, ""},
		{"bad scenario", []string{"-scenario", "5y5"}, "-scenario"},
		{"negative rtt", []string{"-rtts", "0,-1ms"}, "-rtts: -1ms"},
		{"rtt too large", []string{"-rtts", "2s"}, "-rtts: 2s"},
		{"rtt not a duration", []string{"-rtts", "0,soon"}, `"soon" is not a duration`},
		{"no rtt", []string{"-rtts", ","}, "no round trip"},
		{"unknown client", []string{"-clients", "lean,python"}, `unknown client form "python"`},
		{"no client", []string{"-clients", ""}, "no client form"},
		{"unknown strategy", []string{"-strategies", "hope"}, `unknown strategy "hope"`},
		{"zero duration", []string{"-duration", "0"}, "must be positive"},
		{"pick zero", []string{"-pick", "0"}, "-pick 0"},
		{"unknown format", []string{"-format", "xml"}, `-format "xml"`},
		{"stray argument", []string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseWindowFlags(tc.args, &stderr)
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
	o, err := parseWindowFlags([]string{"-rtts", "1ms,0,1ms", "-clients", "book,lean"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.RTTs) != 2 || o.RTTs[0] != time.Millisecond || o.RTTs[1] != 0 ||
		len(o.Clients) != 2 || o.Clients[0] != markettrace.BookClient || o.Scenario.String() != "5x5" || len(o.Strategies) != 4 {
		t.Errorf("options = %+v", o)
	}
}

// TestWindowRealServer sweeps two round trips in both forms on a real
// redis-server: every point is audited clean, carries its measured round
// trip, and every WATCH point its conflict figures; the saved sweep renders
// again to the same table.
func TestWindowRealServer(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	t.Parallel()                                 // a server of its own
	b := redistest.Real(t)
	dir := filepath.Join(t.TempDir(), "w")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"window", "-redis", b.Addr(), "-scenario", "2x2", "-rtts", "0,1ms",
		"-strategies", "watch,fine", "-duration", "300ms", "-format", "json", "-out", dir}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("window: %v\n%s", err, stderr.String())
	}
	var sw report.Sweep
	if err := json.Unmarshal(stdout.Bytes(), &sw); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if len(sw.Points) != 8 || sw.Scenario != "2x2" {
		t.Fatalf("%d points of %s, want 8 of 2x2", len(sw.Points), sw.Scenario)
	}
	for _, p := range sw.Points {
		if p.Violations != 0 || p.Listed == 0 || p.RTTMs <= 0 {
			t.Errorf("%v %s %s: listed %d, %d violations, rtt_ms %v", p.RTTConfiguredMs, p.Client, p.Strategy,
				p.Listed, p.Violations, p.RTTMs)
		}
		if (p.Strategy == "watch") != (p.Conflict != nil) {
			t.Errorf("%v %s %s: conflict %+v", p.RTTConfiguredMs, p.Client, p.Strategy, p.Conflict)
		}
	}
	var again, table bytes.Buffer
	if err := run(context.Background(), []string{"window", "-in", filepath.Join(dir, "window.json")}, &again, &stderr); err != nil {
		t.Fatal(err)
	}
	if err := report.RenderSweep(&table, "table", sw); err != nil {
		t.Fatal(err)
	}
	if again.String() != table.String() {
		t.Errorf("the saved sweep renders differently:\n%s\n%s", again.String(), table.String())
	}
}
