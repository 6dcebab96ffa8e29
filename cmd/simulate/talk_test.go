package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
		if !errors.Is(err, errUsage) {
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

func TestETA(t *testing.T) {
	for _, tc := range []struct {
		elapsed     time.Duration
		done, total int
		want        string
	}{
		{10 * time.Second, 0, 4, ""},
		{10 * time.Second, 1, 4, "about 30s left"},
		{90 * time.Second, 1, 2, "about 1m30s left"},
		{time.Second, 3, 4, "about 300ms left"},
		{time.Second, 4, 4, ""},
	} {
		if got := eta(tc.elapsed, tc.done, tc.total); got != tc.want {
			t.Errorf("eta(%v, %d, %d) = %q, want %q", tc.elapsed, tc.done, tc.total, got, tc.want)
		}
	}
}

// The prefill reports itself on a log: a line when it starts, then at
// most every prefillEvery, and one at the end.
func TestPrefillProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	p.total = 1
	p.start("5x5 fine")
	for done := 1000; done <= 10_000; done += 1000 {
		p.prefill(done, 10_000)
	}
	out := b.String()
	if !strings.Contains(out, "prefill 1,000 of 10,000 listings (10%)") || !strings.Contains(out, "about ") {
		t.Errorf("no first line with an ETA: %q", out)
	}
	if !strings.Contains(out, "prefill 10,000 of 10,000 listings (100%)") {
		t.Errorf("no last line: %q", out)
	}
	if n := strings.Count(out, "prefill "); n != 2 {
		t.Errorf("%d prefill lines within %v, want 2: %q", n, prefillEvery, out)
	}
}
