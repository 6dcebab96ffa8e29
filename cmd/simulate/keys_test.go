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
// gallery use the embedded miniredis, side by side; faults needs a
// redis-server.
func TestJSONKeys(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	out := t.TempDir()
	check := func(t *testing.T, name string, args []string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
		jsonkeys.Check(t, name, stdout.Bytes())
	}
	t.Run("faults", func(t *testing.T) {
		redistest.SkipShort(t, redistest.NeedServer) // the faults run in real time
		redistest.RequireServer(t)
		// A cell of each kind of row (a market's, Redlock's), each with the
		// details of its violation: every key the document has.
		check(t, "faults", []string{"faults", "-fault", "pause,redlock-clock", "-strategies", "fine,redlock", "-trials", "1",
			"-ttl", "100ms", "-format", "json"})
	})
	// Independent runs, side by side: each mostly waits out its duration.
	t.Run("miniredis", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir()) // -redis auto falls back to miniredis
		for _, tc := range []struct {
			name string
			args []string
		}{
			{"run", []string{"run", "-scenarios", "1x1,5x5", "-strategies", "watch,fine", "-duration", "100ms",
				"-format", "json", "-out", out}},
			{"run with markets and prefill", []string{"run", "-scenarios", "1x1", "-strategies", "lua", "-duration", "100ms",
				"-markets", "2", "-prefill", "100", "-format", "json"}},
			{"report of a committed run", []string{"report", "-in", "../../results/repro/results.json", "-format", "json"}},
			{"run, book client through the proxy", []string{"run", "-scenarios", "1x1", "-strategies", "watch", "-duration", "100ms",
				"-profile", "book", "-format", "json"}},
			{"window", []string{"window", "-scenario", "1x1", "-rtts", "0,1ms", "-strategies", "watch,lua", "-duration", "100ms",
				"-format", "json"}},
			{"gallery", []string{"gallery", "-format", "json"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				check(t, tc.name, tc.args)
			})
		}
	})
	// After the run that wrote it.
	t.Run("report of this run", func(t *testing.T) {
		check(t, "report of this run", []string{"report", "-in", filepath.Join(out, "results.json"), "-format", "json"})
	})
}
