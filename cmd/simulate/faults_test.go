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
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/faults"
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
		{"unknown fault", []string{"-fault", "meteor"}, errUsage},
		{"unknown strategy", []string{"-strategies", "optimism"}, errUsage},
		{"no trials", []string{"-trials", "0"}, errUsage},
		{"pause within ttl", []string{"-ttl", "1s", "-pause", "500ms"}, errUsage},
		{"bad format", []string{"-format", "xml"}, errUsage},
		{"stray argument", []string{"extra"}, errUsage},
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
	var doc faultsDoc
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
			if r.History.SoldTwice != 1 {
				t.Errorf("fine: sold twice %d, want 1", r.History.SoldTwice)
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

func TestFaultsRender(t *testing.T) {
	doc := faultsDoc{Trials: 1, LockTTLMs: 200, DurationS: 1, Rows: []faults.Result{
		{Fault: faults.Pause, Variant: "fine", Trials: 1, LockLost: 1},
	}}
	for _, tc := range []struct {
		format string
		wide   bool
		want   []string
	}{
		{"table", true, []string{"fault", "double holders", "pause", "fine", "1 trials per cell"}},
		{"markdown", false, []string{"fault", "double holders", "pause", "fine", "1 trials per cell"}},
		{"table", false, []string{"fault", "double", "holders", "pause", "fine", "1 trials per cell", "-wide"}},
		{"csv", false, []string{"fault,strategy,trials,attempted,ok,failed,unknown,", ",lock_lost,double_holders,", "\npause,fine,1,"}},
	} {
		t.Run(fmt.Sprintf("%s wide=%v", tc.format, tc.wide), func(t *testing.T) {
			var b bytes.Buffer
			if err := renderFaults(&b, tc.format, tc.wide, doc); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(b.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}
