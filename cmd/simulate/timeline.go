package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockmarket/lockmarket/internal/failure/faults"
	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

// timelineWidth is the width of the printed timelines.
const timelineWidth = 100

// printGalleryTimeline runs recipe n (its number) flawed and fixed and
// prints both timelines.
func printGalleryTimeline(ctx context.Context, env gallery.Env, n string, verbose bool, w io.Writer) error {
	s, err := gallery.ScenarioOf(n)
	if err != nil {
		return fmt.Errorf("no recipe %q", n)
	}
	fmt.Fprintf(w, "Recipe %s\nFault: %s\n\n", s.Recipe, s.Fault)
	for _, fixed := range []bool{false, true} {
		tl, err := s.RunOne(ctx, env, fixed)
		if err != nil {
			return err
		}
		if fixed {
			fmt.Fprintln(w)
		}
		if err := tl.Text(w, timelineWidth, verbose); err != nil {
			return err
		}
	}
	return nil
}

// faultTrace is a pause fault and a strategy to trace.
type faultTrace struct {
	fault    faults.Fault
	strategy faults.Variant
}

// faultTraces lists every FAULT/STRATEGY that -timeline takes.
func faultTraces() []string {
	var out []string
	for _, f := range faults.Traceable() {
		for _, v := range f.Variants() {
			out = append(out, string(f)+"/"+string(v))
		}
	}
	return out
}

func parseFaultTrace(s string) (faultTrace, error) {
	if !slices.Contains(faultTraces(), s) {
		return faultTrace{}, fmt.Errorf("%q is not one of %s", s, strings.Join(faultTraces(), ", "))
	}
	f, v, _ := strings.Cut(s, "/")
	return faultTrace{fault: faults.Fault(f), strategy: faults.Variant(v)}, nil
}

// printFaultTimeline runs one trial of a pause fault, recorded, and
// prints its timeline.
func printFaultTimeline(ctx context.Context, t faultTrace, cfg faults.Config, verbose bool, w io.Writer) error {
	tl, _, err := faults.Trace(ctx, t.fault, t.strategy, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Fault %s: %s\n\n", t.fault, t.fault.Describe())
	return tl.Text(w, timelineWidth, verbose)
}

// writeGalleryTimelines writes a recipe's timelines into dir:
// recipe-N-flawed.svg, recipe-N-fixed.svg and recipe-N.txt (both as text).
func writeGalleryTimelines(dir string, row gallery.Row) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := row.Recipe.ID
	var txt bytes.Buffer
	fmt.Fprintf(&txt, "Recipe %s\nFault: %s\n\n", row.Recipe, row.Fault)
	for _, tl := range []struct {
		name string
		t    timeline.Timeline
	}{{"flawed", row.Timeline}, {"fixed", row.FixedTimeline}} {
		var svg bytes.Buffer
		if err := tl.t.SVG(&svg); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("recipe-%s-%s.svg", n, tl.name)), svg.Bytes(), 0o644); err != nil {
			return err
		}
		if tl.name == "fixed" {
			txt.WriteString("\n")
		}
		if err := tl.t.Text(&txt, timelineWidth, false); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "recipe-"+n+".txt"), txt.Bytes(), 0o644)
}
