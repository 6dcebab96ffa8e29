package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
)

const galleryUsage = `usage: simulate gallery [flags]

Reproduces the failure of each flawed lock recipe (package internal/flawed)
in the market, by injecting its fault at the vulnerable point, and then runs
the same scenario with the recipe that fixes it. Each row counts the
violations seen: market audit violations (items sold twice, sales not paid
exactly once), purchases blocked by a lock that never expires, or reads that
saw a writer's half-done work.

Flags:
`

const galleryExample = `
Examples:
  simulate gallery -recipes 4,5,6 -format json
  simulate gallery -format csv > gallery.csv
`

// galleryOptions are the parsed flags of "simulate gallery".
type galleryOptions struct {
	redis   string
	format  string
	wide    bool
	recipes []string // recipe numbers; empty: all
	verbose bool
	trace   string // recipe number whose timelines to print; "" for the table
	out     string // directory for each run's timeline (SVG and text); "" for none
}

func parseGalleryFlags(args []string, stderr io.Writer) (galleryOptions, error) {
	f := newCmdFlags("simulate gallery", galleryUsage, galleryExample, stderr)
	var o galleryOptions
	known := gallery.Numbers()
	f.redis(&o.redis, "")
	f.format(&o.format, report.Formats...)
	f.wide(&o.wide, "the fault included")
	output.List(f.Flags, &o.recipes, "recipes", "", "comma-separated recipe numbers to run ("+strings.Join(known, ",")+"); empty: all",
		"", func(r string) (string, error) {
			if !slices.Contains(known, r) {
				return "", fmt.Errorf("no recipe %q (want some of %s)", r, strings.Join(known, ","))
			}
			return r, nil
		})
	f.verbose(&o.verbose, "what each flawed run broke to stderr; with -timeline, every command")
	f.out(&o.out, "each recipe's timelines, flawed and fixed (SVG swimlanes and text),")
	f.StringVar(&o.trace, "timeline", "", "print recipe `N`'s timeline, flawed and fixed, step by step instead of the table")
	f.Check(func() error {
		if o.trace != "" && !slices.Contains(known, o.trace) {
			return fmt.Errorf("-timeline: no recipe %q (want one of %s)", o.trace, strings.Join(known, ", "))
		}
		return nil
	})
	return o, f.Read(args)
}

func runGallery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseGalleryFlags(args, stderr)
	if err != nil {
		return err
	}
	conn, err := openRedis(ctx, "simulate gallery", o.redis, stderr)
	if err != nil {
		return err
	}
	defer conn.Close()
	env := gallery.Env{Client: conn.Client, Mini: conn.Mini}
	if o.trace != "" {
		return gallery.WriteTimeline(ctx, env, o.trace, o.verbose, stdout)
	}
	doc := gallery.Document{Env: conn.Env(), Rows: []gallery.Row{}}
	prog := progress.New(stderr)
	cr, err := progress.Run(ctx, prog, gallery.Cells(env, o.recipes, o.verbose, o.out, &doc, prog))
	if err != nil {
		return err
	}
	cr.Report(stderr, "simulate gallery", len(doc.Rows))
	if o.out != "" && len(doc.Rows) > 0 {
		recipes := make([]string, len(doc.Rows))
		for i, row := range doc.Rows {
			recipes[i] = row.Recipe.ID
		}
		fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate gallery: wrote %d files into %s: recipe-N.txt, "+
			"recipe-N-flawed.svg and recipe-N-fixed.svg for N in %s", 3*len(doc.Rows), o.out,
			strings.Join(recipes, ", ")), output.Width))
	}
	if err := doc.Render(stdout, o.format, o.wide); err != nil {
		return err
	}
	return cr.Err(len(doc.Rows))
}
