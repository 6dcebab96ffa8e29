package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A flag error is one line and where to find the usage, never the whole
// usage.
func TestFlagErrorIsOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"-duration", "5"},
		{"-bogus"},
		{"run", "-pick", "x"},
		{"gallery", "-bogus"},
		{"faults", "-trials", "x"},
		{"window", "-bogus"},
		{"report", "-bogus"},
		{"version", "extra"},
		{"nosuch"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[1], "run 'simulate") || !strings.HasSuffix(lines[1], " -h' for usage") {
			t.Errorf("%q printed %q, want one line and the pointer to -h", args, stderr.String())
		}
		if stdout.Len() > 0 {
			t.Errorf("%q printed %q on stdout", args, stdout.String())
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
	p := newProgress(&b, 1)
	p.startLabel("5x5 fine")
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
