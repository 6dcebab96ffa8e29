package progress

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report"
)

// TestRun: the cells run in order, each between its label and its
// figures; a failure stops the run with the cell named, an interrupted
// cell stops it after its figures, and a context ended before a cell
// runs none. Notes a cell prints come between its label and its figures.
func TestRun(t *testing.T) {
	errBoom := errors.New("boom")
	type step struct {
		summary     string
		interrupted bool
		err         error
	}
	for _, tc := range []struct {
		name      string
		steps     []step
		cancelled bool   // the context has ended before the first cell
		wantErr   error  // nil, or what the error wraps
		want      string // the progress lines
		done      int
		stopped   bool
		ran       int // cells whose run was called
	}{
		{"all", []step{{summary: "one"}, {summary: "two"}}, false, nil,
			"[1/2] c0 \nnote of c0\n[1/2] c0 one  (0.0s", 2, false, 2},
		{"failure", []step{{summary: "one"}, {err: errBoom}, {summary: "three"}}, false, errBoom,
			"[2/3] c1 \nnote of c1\n[2/3] c1 failed: boom\n", 1, false, 2},
		{"interrupted", []step{{summary: "one", interrupted: true}, {summary: "two"}}, false, nil,
			"[1/2] c0 one (interrupted)  (", 0, true, 1},
		{"cancelled", []step{{summary: "one"}}, true, nil, "", 0, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			var out bytes.Buffer
			prog := New(&out)
			var cells []Cell
			ran := 0
			for i, s := range tc.steps {
				label := "c" + string(rune('0'+i))
				cells = append(cells, Cell{Label: label, Run: func(ctx context.Context) (string, bool, error) {
					ran++
					prog.Note("note of " + label)
					return s.summary, s.interrupted, s.err
				}})
			}
			r, err := Run(ctx, prog, cells)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "cell c1") {
				t.Errorf("the error %q does not name the cell", err)
			}
			if r.Done != tc.done || r.Interrupted != tc.stopped || r.Total != len(tc.steps) {
				t.Errorf("run %+v, want %d done of %d, interrupted %v", r, tc.done, len(tc.steps), tc.stopped)
			}
			if ran != tc.ran {
				t.Errorf("%d cells ran, want %d", ran, tc.ran)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("progress %q lacks %q", out.String(), tc.want)
			}
			if tc.done == 2 && !strings.Contains(out.String(), "[2/2] c1 \nnote of c1\n[2/2] c1 two  (") {
				t.Errorf("progress %q lacks the second cell", out.String())
			}
		})
	}
}

func TestCells(t *testing.T) {
	for n, want := range map[int]string{0: "0 cells", 1: "1 cell", 12: "12 cells"} {
		if got := Cells(n); got != want {
			t.Errorf("Cells(%d) = %q, want %q", n, got, want)
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
	p := New(&b)
	p.total = 1
	p.Start("5x5 fine")
	for done := 1000; done <= 10_000; done += 1000 {
		p.Prefill(done, 10_000)
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

// TestLineFits: a cell's line with figures far larger than a run makes
// fits output.Width columns and keeps its first figure.
func TestLineFits(t *testing.T) {
	var p bytes.Buffer
	prog := New(&p)
	prog.total = 1000
	prog.n = 999
	prog.Start("1000x1000 coarse 100/100")
	prog.Done(RowSummary(report.Row{Listed: 987_654_321, Bought: 123_456_789, FailedPurchases: 12_345_678,
		Retries: 999_999_999, BoughtPerS: 12_345_678, Violations: 12}))
	for _, line := range strings.Split(p.String(), "\n") {
		if n := len([]rune(line)); n > output.Width {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	if !strings.Contains(p.String(), "bought 123,456,789 (") {
		t.Errorf("the line lost its first figure: %q", p.String())
	}
}
