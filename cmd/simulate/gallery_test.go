package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/report/output"
)

func TestGalleryFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		bad  string // part of the usage message; "" for valid flags
	}{
		{"defaults", nil, ""},
		{"all flags", []string{"-redis", "127.0.0.1:1", "-format", "markdown", "-recipes", "1, 11", "-v"}, ""},
		{"unknown recipe", []string{"-recipes", "7"}, `no recipe "7"`},
		{"csv", []string{"-format", "csv", "-wide"}, ""},
		{"unknown format", []string{"-format", "xml"}, `-format "xml"`},
		{"stray argument", []string{"extra"}, `unexpected argument "extra"`},
		{"unknown flag", []string{"-nope"}, "-nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := parseGalleryFlags(tc.args, &stderr)
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("%v: %s", err, stderr.String())
				}
				return
			}
			if !errors.Is(err, output.ErrUsage) || !strings.Contains(stderr.String(), tc.bad) {
				t.Fatalf("err %v, stderr %q; want usage error mentioning %q", err, stderr.String(), tc.bad)
			}
		})
	}
}

func TestGalleryRunsAndReports(t *testing.T) {
	t.Parallel() // a server or a temporary directory of its own
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"gallery", "-recipes", "1,9,11", "-format", "json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var doc gallery.Document
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if len(doc.Rows) != 3 || doc.Redis.Mode == "" {
		t.Fatalf("rows %d, redis %+v", len(doc.Rows), doc.Redis)
	}
	for _, r := range doc.Rows {
		if r.Violations == 0 || r.FixedViolations != 0 {
			t.Errorf("%s: %d violations, fixed %d", r.Recipe, r.Violations, r.FixedViolations)
		}
	}
	for _, format := range []string{"table", "markdown", "csv"} {
		var out bytes.Buffer
		if err := doc.Render(&out, format, true); err != nil {
			t.Fatal(err)
		}
		for _, want := range append([]string{"recipe", "fault", "consequence", "violations", "fixed_by", "fixed_violations"}, doc.Rows[0].Recipe.String(), doc.Rows[2].FixedBy) {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s output lacks %q:\n%s", format, want, out.String())
			}
		}
	}
	// The default table: the narrow columns, and every word of the
	// recipes and their fixes, wrapped.
	var out bytes.Buffer
	if err := doc.Render(&out, "table", false); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range []string{"recipe", "consequence", "violations", "fixed by", "violations\nafter fix"} {
		want = append(want, strings.Fields(c)...)
	}
	for _, r := range doc.Rows {
		want = append(want, strings.Fields(r.Recipe.String()+" "+r.Consequence+" "+r.FixedBy)...)
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("default table lacks %q:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), doc.Rows[0].Fault) {
		t.Errorf("default table shows the fault:\n%s", out.String())
	}
}
