package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/jsonkeys"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestJSONKeys runs every subcommand that prints a JSON document, in
// process with small durations, and checks each document: every key is
// snake_case at any depth and no value is a duration string. run and
// gallery use the embedded miniredis; faults needs a redis-server.
func TestJSONKeys(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	out := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		realServer bool // needs a redis-server binary
	}{
		{"run", []string{"run", "-scenarios", "1x1,5x5", "-strategies", "watch,fine", "-duration", "100ms",
			"-format", "json", "-out", out}, false},
		{"run with markets and prefill", []string{"run", "-scenarios", "1x1", "-strategies", "lua", "-duration", "100ms",
			"-markets", "2", "-prefill", "100", "-format", "json"}, false},
		{"report of this run", []string{"report", "-in", filepath.Join(out, "results.json"), "-format", "json"}, false},
		{"report of a committed run", []string{"report", "-in", "../../results/repro/results.json", "-format", "json"}, false},
		{"run, book client through the proxy", []string{"run", "-scenarios", "1x1", "-strategies", "watch", "-duration", "100ms",
			"-profile", "book", "-format", "json"}, false},
		{"window", []string{"window", "-scenario", "1x1", "-rtts", "0,1ms", "-strategies", "watch,lua", "-duration", "100ms",
			"-format", "json"}, false},
		{"gallery", []string{"gallery", "-format", "json"}, false},
		{"faults", []string{"faults", "-fault", "pause,redlock-clock", "-trials", "1", "-ttl", "100ms", "-format", "json"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.realServer {
				redistest.SkipShort(t, redistest.NeedServer) // the faults run in real time
				redistest.RequireServer(t)
			} else {
				t.Setenv("PATH", t.TempDir()) // -redis auto falls back to miniredis
			}
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), tc.args, &stdout, &stderr); err != nil {
				t.Fatalf("%v: %v\n%s", tc.args, err, stderr.String())
			}
			jsonkeys.Check(t, tc.name, stdout.Bytes())
		})
	}
}
