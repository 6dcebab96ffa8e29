package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

func TestTimelineFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		bad  string
	}{
		{[]string{"gallery", "-timeline", "7"}, "want one of 1, 2, 3, 4, 5, 6, 9, 11"},
		{[]string{"gallery", "-timeline", "six"}, `no recipe "six"`},
		{[]string{"faults", "-timeline", "stall/fine"}, "pause/fine+fencing"},
		{[]string{"faults", "-timeline", "pause"}, `"pause" is not one of`},
		{[]string{"faults", "-timeline", "pause/redlock"}, "pause-process/watch"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, &stdout, &stderr)
		if !errors.Is(err, output.ErrUsage) || !strings.Contains(stderr.String(), tc.bad) {
			t.Errorf("%v: err %v, stderr %q; want a usage error with %q", tc.args, err, stderr.String(), tc.bad)
		}
	}
}

// checkTimelineText checks that a printed timeline fits 100 columns and
// marks each of want.
func checkTimelineText(t *testing.T, out string, want ...string) {
	t.Helper()
	for l := range strings.Lines(out) {
		if n := utf8.RuneCountInString(strings.TrimRight(l, "\n")); n > output.Width {
			t.Errorf("line of %d characters: %q", n, l)
		}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in\n%s", w, out)
		}
	}
}

func TestGalleryTimeline(t *testing.T) {
	t.Parallel() // a server or a temporary directory of its own
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"gallery", "-timeline", "6"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	out := stdout.String()
	checkTimelineText(t, out, "(flawed)", "(fixed)", "A ann", "B bob", "paused before its commit",
		timeline.MarkViolation+" ", "commits after its lease", timeline.MarkRefused+" ", "EXEC aborted")
	// The flawed run's violation comes before the fixed run's refusal.
	if strings.Index(out, timeline.MarkViolation) > strings.Index(out, timeline.MarkRefused+" ") {
		t.Errorf("marks out of order:\n%s", out)
	}
}

func TestFaultTimeline(t *testing.T) {
	redistest.RequireServer(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"faults", "-timeline", "pause/fine", "-ttl", "100ms", "-pause", "250ms"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	checkTimelineText(t, stdout.String(), "fault pause (fine)", "A alice", "B bob", "ran out",
		timeline.MarkViolation+" ", "commits after its lease", "bought 2 times")
}

func TestGalleryOut(t *testing.T) {
	t.Parallel() // a server or a temporary directory of its own
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"gallery", "-recipes", "4", "-out", dir}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, name := range []string{"recipe-4-flawed.svg", "recipe-4-fixed.svg", "recipe-4.txt"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".svg") && (!bytes.HasPrefix(b, []byte("<svg ")) || !bytes.Contains(b, []byte("B bob"))) {
			t.Errorf("%s: %.200s", name, b)
		}
		if strings.HasSuffix(name, ".txt") {
			checkTimelineText(t, string(b), "(flawed)", "(fixed)", "deletes B bob's lock")
		}
	}
	if !bytes.Contains(stdout.Bytes(), []byte("4 SET NX PX +")) {
		t.Errorf("no table on stdout: %s", stdout.String())
	}
}
