package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestEachCell: the cells run in order, each between its label and its
// figures; a failure stops the run with the cell named, an interrupted
// cell stops it after its figures, and a context ended before a cell
// runs none. Notes a cell prints come between its label and its figures.
func TestEachCell(t *testing.T) {
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
			prog := newProgress(&out)
			var cells []cell
			ran := 0
			for i, s := range tc.steps {
				label := "c" + string(rune('0'+i))
				cells = append(cells, cell{label: label, run: func(ctx context.Context) (string, bool, error) {
					ran++
					prog.note("note of " + label)
					return s.summary, s.interrupted, s.err
				}})
			}
			r, err := eachCell(ctx, prog, cells)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "cell c1") {
				t.Errorf("the error %q does not name the cell", err)
			}
			if r.done != tc.done || r.interrupted != tc.stopped || r.total != len(tc.steps) {
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

func TestCellCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 cells", 1: "1 cell", 12: "12 cells"} {
		if got := cellCount(n); got != want {
			t.Errorf("cellCount(%d) = %q, want %q", n, got, want)
		}
	}
}
