package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/failure/faults"
	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

func TestParseFaultsFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		err  error
	}{
		{"defaults", nil, nil},
		{"some faults", []string{"-fault", "pause,stall", "-strategies", "fine,fine+fencing", "-trials", "2"}, nil},
		{"help", []string{"-h"}, flag.ErrHelp},
		{"unknown fault", []string{"-fault", "meteor"}, output.ErrUsage},
		{"unknown strategy", []string{"-strategies", "optimism"}, output.ErrUsage},
		{"no trials", []string{"-trials", "0"}, output.ErrUsage},
		{"pause within ttl", []string{"-ttl", "1s", "-pause", "500ms"}, output.ErrUsage},
		{"bad format", []string{"-format", "xml"}, output.ErrUsage},
		{"stray argument", []string{"extra"}, output.ErrUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFaultsFlags(tt.args, io.Discard)
			if tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("err = %v, want %v", err, tt.err)
			}
		})
	}
}

// TestFaultsCommand runs the pause fault through the command and reads its
// JSON: the unfenced fine lock sells the listing twice, watch does not,
// and the command does not fail for an expected violation.
func TestFaultsCommand(t *testing.T) {
	redistest.RequireServer(t)
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"faults", "-fault", "pause", "-strategies", "watch,fine",
		"-trials", "1", "-ttl", "100ms", "-format", "json"}, &out, &errOut)
	if err != nil {
		t.Fatalf("faults: %v\n%s", err, errOut.String())
	}
	var doc faults.Document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, out.String())
	}
	if len(doc.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(doc.Rows))
	}
	for _, r := range doc.Rows {
		if r.Fault != faults.Pause || r.Trials != 1 {
			t.Errorf("row %+v", r)
		}
		switch r.Variant {
		case "watch":
			if r.Violations() != 0 {
				t.Errorf("watch: %d violations", r.Violations())
			}
		case "fine":
			if r.History[history.SoldTwice] != 1 {
				t.Errorf("fine: sold twice %d, want 1", r.History[history.SoldTwice])
			}
		default:
			t.Errorf("unexpected strategy %q", r.Variant)
		}
	}
	if doc.Machine.CPUs < 1 || doc.Redis.Mode != "redis-server" || !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(doc.Redis.Version) {
		t.Errorf("redis %+v, machine %+v", doc.Redis, doc.Machine)
	}
	if doc.LockTTLMs != 100 || doc.PauseMs != 400 || doc.DurationS != 1 || doc.ReadTimeoutMs != 300 {
		t.Errorf("configuration: ttl %vms, pause %vms, duration %vs, read timeout %vms", doc.LockTTLMs, doc.PauseMs, doc.DurationS, doc.ReadTimeoutMs)
	}
}

// TestFaultsKeepsFailedCell: a cell whose set-up fails is reported as an
// error, with its message, beside the cells that ran, before and after it;
// the command exits with status 3, not 1 (a violation).
func TestFaultsKeepsFailedCell(t *testing.T) {
	redistest.RequireServer(t)
	setupErr := errors.New("list at set-up: locking: lock lost")
	runFaultCell = func(ctx context.Context, f faults.Fault, v faults.Variant, cfg faults.Config) (faults.Result, error) {
		if v == "lua" {
			return faults.Result{}, setupErr
		}
		return faults.Run(ctx, f, v, cfg)
	}
	t.Cleanup(func() { runFaultCell = faults.Run })
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"faults", "-fault", "pause", "-strategies", "watch,lua,fine",
		"-trials", "1", "-ttl", "100ms", "-format", "json"}, &out, &errOut)
	if !errors.Is(err, errCellsNotRun) || errors.Is(err, errUnexpected) || exitCode(err) != 3 {
		t.Fatalf("faults with a failed cell: %v (exit %d), want %v (exit 3)\n%s", err, exitCode(err), errCellsNotRun, errOut.String())
	}
	if !strings.Contains(errOut.String(), "pause / lua ERROR, could not run: "+setupErr.Error()) {
		t.Errorf("progress does not show the failed cell:\n%s", errOut.String())
	}
	var doc faults.Document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, out.String())
	}
	var got []string
	for _, r := range doc.Rows {
		got = append(got, fmt.Sprintf("%s trials=%d error=%q", r.Variant, r.Trials, r.Error))
		if r.Error == "" && r.Attempted == 0 {
			t.Errorf("%s: no operations recorded", r.Variant)
		}
	}
	want := []string{`watch trials=1 error=""`, `lua trials=0 error="` + setupErr.Error() + `"`, `fine trials=1 error=""`}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{output.ErrUsage, 2},
		{fmt.Errorf("%w: pause/watch", errUnexpected), 1},
		{fmt.Errorf("%w: 1 of 3: pause/lua", errCellsNotRun), 3},
		{fmt.Errorf("%w after 2 of 12 cells", progress.ErrInterrupted), exitInterrupted},
		{fmt.Errorf("explore: %w: resource", errExploreFound), 1},
		{errors.New("write: broken pipe"), 1},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestFaultsRender(t *testing.T) {
	doc := faults.Document{Trials: 1, LockTTLMs: 200, DurationS: 1, Rows: []faults.Result{
		{Fault: faults.Pause, Variant: "fine", Trials: 1, LockLost: 1},
		{Fault: faults.DebugSleep, Variant: "fine+fencing", Error: "list at set-up: lock lost"},
	}}
	for _, tc := range []struct {
		format string
		wide   bool
		want   []string
	}{
		{"table", true, []string{"fault", "double holders", "pause", "fine", "1 trials per cell", "error",
			"debug-sleep / fine+fencing: list at set-up: lock lost"}},
		{"markdown", false, []string{"fault", "double holders", "pause", "fine", "1 trials per cell", "| error |",
			"debug-sleep / fine+fencing: list at set-up: lock lost"}},
		{"table", false, []string{"fault", "double", "holders", "pause", "fine", "1 trials per cell", "-wide", "error",
			"debug-sleep / fine+fencing: list at set-up: lock lost"}},
		{"csv", false, []string{"fault,strategy,trials,attempted,ok,failed,unknown,", ",lock_lost,double_holders,",
			",violations,error\n", "\npause,fine,1,", ",0,\n", "\ndebug-sleep,fine+fencing,0,", ",0,list at set-up: lock lost\n"}},
	} {
		t.Run(fmt.Sprintf("%s wide=%v", tc.format, tc.wide), func(t *testing.T) {
			var b bytes.Buffer
			if err := doc.Render(&b, tc.format, tc.wide); err != nil {
				t.Fatal(err)
			}
			// The caption wraps: look in it as one line too.
			flat := strings.Join(strings.Fields(b.String()), " ")
			for _, want := range tc.want {
				if !strings.Contains(b.String(), want) && !strings.Contains(flat, want) {
					t.Errorf("output lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}
