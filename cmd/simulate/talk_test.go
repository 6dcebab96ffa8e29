package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/report/output"
)

// A flag error is one sentence naming the subcommand (wrapped to
// output.Width columns), and where to find that subcommand's usage, never
// the whole usage; a malformed -redis is such an error too.
func TestFlagErrorIsOneLine(t *testing.T) {
	for _, tc := range []struct {
		name string // the subcommand named
		args []string
	}{
		{"simulate run", []string{"-duration", "5"}},
		{"simulate run", []string{"-bogus"}},
		{"simulate run", []string{"run", "-pick", "x"}},
		{"simulate run", []string{"-redis", "redis://%zz"}},
		{"simulate gallery", []string{"gallery", "-bogus"}},
		{"simulate gallery", []string{"gallery", "-redis", "redis://%zz"}},
		{"simulate faults", []string{"faults", "-trials", "x"}},
		{"simulate window", []string{"window", "-bogus"}},
		{"simulate window", []string{"window", "-redis", "redis://%zz"}},
		{"simulate explore", []string{"explore", "-recipe", "1", "-redis", "redis://%zz"}},
		{"simulate explore", []string{"explore", "-recipe", "1", "-format", "csv"}},
		{"simulate report", []string{"report", "-bogus"}},
		{"simulate version", []string{"version", "extra"}},
		{"simulate", []string{"nosuch"}},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, &stdout, &stderr)
		if !errors.Is(err, output.ErrUsage) {
			t.Errorf("%q: %v, want a usage error", tc.args, err)
		}
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], tc.name+": ") ||
			lines[len(lines)-1] != "run '"+tc.name+" -h' for usage" || output.Widest(stderr.String()) > output.Width {
			t.Errorf("%q printed %q, want one line of %s and the pointer to its -h", tc.args, stderr.String(), tc.name)
		}
		if stdout.Len() > 0 {
			t.Errorf("%q printed %q on stdout", tc.args, stdout.String())
		}
	}
}

func TestVersionSubcommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"-version"}} {
		var stdout bytes.Buffer
		if err := run(context.Background(), args, &stdout, &bytes.Buffer{}); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if !strings.HasPrefix(stdout.String(), "simulate ") || strings.Count(stdout.String(), "\n") != 1 {
			t.Errorf("%q printed %q", args, stdout.String())
		}
	}
}
