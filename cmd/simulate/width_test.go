package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/report/output"
)

// TestEveryLineFits walks every help (the overview, each subcommand's -h
// and "help NAME", version's) and runs each subcommand briefly on the
// embedded miniredis (no redis-server on PATH, which also gives the lines
// of that case): every line printed on stdout or stderr fits output.Width
// columns.
func TestEveryLineFits(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server: miniredis, and its lines
	t.Setenv("REDIS_URL", "")
	dir := t.TempDir()
	cmds := [][]string{{"-h"}, {"help"}, {"version", "-h"}, {"version"}, {"nosuch"}}
	for _, name := range program.Visible() {
		cmds = append(cmds, []string{"help", name}, []string{name, "-h"}, []string{name, "-bogus"})
	}
	cmds = append(cmds,
		[]string{"run", "-scenarios", "1x1", "-strategies", "fine,lua", "-duration", "40ms", "-rounds", "2",
			"-out", filepath.Join(dir, "run")},
		[]string{"report", "-in", filepath.Join(dir, "run", "results.json"), "-out", filepath.Join(dir, "again")},
		[]string{"gallery", "-recipes", "1", "-out", filepath.Join(dir, "gallery")},
		[]string{"explore", "-recipe", "1", "-first", "-out", filepath.Join(dir, "explore")},
	)
	for _, args := range cmds {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if stdout.Len()+stderr.Len() == 0 {
			t.Errorf("%q printed nothing (%v)", args, err)
		}
		for _, out := range []string{stdout.String(), stderr.String()} {
			for _, line := range strings.Split(out, "\n") {
				if n := len([]rune(line)); n > output.Width {
					t.Errorf("%q printed a line of %d columns:\n%s", args, n, line)
				}
			}
		}
	}
}
