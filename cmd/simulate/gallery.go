package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report"
)

const galleryUsage = `usage: simulate gallery [flags]

Reproduces the failure of each flawed lock recipe (package internal/failure/flawed)
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
	known := galleryNumbers()
	f.redis(&o.redis, "")
	f.format(&o.format, report.Formats...)
	f.wide(&o.wide, "the fault included")
	listFlag(f, &o.recipes, "recipes", "", "comma-separated recipe numbers to run ("+strings.Join(known, ",")+"); empty: all",
		"", func(r string) (string, error) {
			if !slices.Contains(known, r) {
				return "", fmt.Errorf("no recipe %q (want some of %s)", r, strings.Join(known, ","))
			}
			return r, nil
		})
	f.verbose(&o.verbose, "what each flawed run broke to stderr; with -timeline, every command")
	f.out(&o.out, "each recipe's timelines, flawed and fixed (SVG swimlanes and text),")
	f.StringVar(&o.trace, "timeline", "", "print recipe `N`'s timeline, flawed and fixed, step by step instead of the table")
	f.check(func() error {
		if o.trace != "" && !slices.Contains(known, o.trace) {
			return fmt.Errorf("-timeline: no recipe %q (want one of %s)", o.trace, strings.Join(known, ", "))
		}
		return nil
	})
	return o, f.parse(args)
}

// galleryNumbers lists the recipe numbers of the scenarios ("1", "2", ...).
func galleryNumbers() []string {
	var out []string
	for _, s := range gallery.Scenarios() {
		out = append(out, s.Recipe.ID)
	}
	return out
}

// galleryDoc is the JSON output.
type galleryDoc struct {
	// Env is where the scenarios ran.
	output.Env
	Rows []gallery.Row `json:"rows"`
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
		return printGalleryTimeline(ctx, env, o.trace, o.verbose, stdout)
	}
	doc := galleryDoc{Env: conn.Env(), Rows: []gallery.Row{}}
	prog := newProgress(stderr)
	var cells []cell
	for _, s := range gallery.Scenarios() {
		if len(o.recipes) > 0 && !slices.Contains(o.recipes, s.Recipe.ID) {
			continue
		}
		cells = append(cells, cell{label: s.Recipe.String(), run: func(ctx context.Context) (string, bool, error) {
			row, err := s.Run(ctx, env)
			if err != nil {
				return "", false, err
			}
			doc.Rows = append(doc.Rows, row)
			if o.verbose {
				prog.noteEach("  ", row.Details)
				prog.noteEach("  fixed run: ", row.FixedDetails)
			}
			if o.out != "" {
				if err := writeGalleryTimelines(o.out, row); err != nil {
					return "", false, err
				}
			}
			return fmt.Sprintf("%s; fixed: %d", output.Plural(row.Violations, "violation"), row.FixedViolations), false, nil
		}})
	}
	cr, err := eachCell(ctx, prog, cells)
	if err != nil {
		return err
	}
	cr.report(stderr, "simulate gallery", len(doc.Rows))
	if o.out != "" && len(doc.Rows) > 0 {
		recipes := make([]string, len(doc.Rows))
		for i, row := range doc.Rows {
			recipes[i] = row.Recipe.ID
		}
		fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate gallery: wrote %d files into %s: recipe-N.txt, "+
			"recipe-N-flawed.svg and recipe-N-fixed.svg for N in %s", 3*len(doc.Rows), o.out,
			strings.Join(recipes, ", ")), output.Width))
	}
	if err := writeGallery(stdout, o.format, o.wide, doc); err != nil {
		return err
	}
	return cr.err(len(doc.Rows))
}

// galleryColumns are the columns of the wide table, the markdown view and
// the CSV, named as the JSON keys.
var galleryColumns = []string{"recipe", "fault", "consequence", "violations", "fixed_by", "fixed_violations"}

var galleryNumeric = []bool{false, false, false, true, false, true}

func galleryCells(r gallery.Row) []string {
	return []string{r.Recipe.String(), r.Fault, r.Consequence, strconv.Itoa(r.Violations), r.FixedBy, strconv.Itoa(r.FixedViolations)}
}

// The default table fits output.Width columns: the fault is left to -wide,
// and the recipe, its consequence and its fix are wrapped to these widths.
var (
	galleryNarrowColumns = []string{"recipe", "consequence", "violations", "fixed by", "violations\nafter fix"}
	galleryNarrowNumeric = []bool{false, false, true, false, true}
)

const (
	galleryRecipeWidth      = 16
	galleryConsequenceWidth = 28
	galleryFixedByWidth     = 20
)

func galleryNarrowCells(r gallery.Row) []string {
	return []string{
		output.Wrap(r.Recipe.String(), galleryRecipeWidth), output.Wrap(r.Consequence, galleryConsequenceWidth),
		output.Thousands(int64(r.Violations)), output.Wrap(r.FixedBy, galleryFixedByWidth),
		output.Thousands(int64(r.FixedViolations)),
	}
}

const galleryNarrowCaption = "violations: market audit violations (an item sold twice, a sale not paid exactly once), " +
	"purchases blocked by a lock that never expires, or reads that saw a writer's half-done work, " +
	"with the flawed recipe under its fault; after fix: the same with the recipe that fixes it. " +
	"-wide adds the fault injected."

// galleryView is the table of doc: every column when wide (and for
// markdown and CSV), else the columns that fit output.Width.
func galleryView(doc galleryDoc, wide bool) view {
	redis := fmt.Sprintf("Redis: %s.", doc.Redis)
	if wide {
		v := view{columns: galleryColumns, numeric: galleryNumeric, caption: redis}
		for _, r := range doc.Rows {
			v.rows = append(v.rows, galleryCells(r))
		}
		return v
	}
	v := view{columns: galleryNarrowColumns, numeric: galleryNarrowNumeric, ruled: true,
		caption: output.Wrap(redis+" "+galleryNarrowCaption, output.Width)}
	for _, r := range doc.Rows {
		v.rows = append(v.rows, galleryNarrowCells(r))
	}
	return v
}

// writeGallery writes doc in format (one of report.Formats).
func writeGallery(w io.Writer, format string, wide bool, doc galleryDoc) error {
	switch format {
	case "json":
		return writeJSON(w, doc)
	case "csv":
		return galleryView(doc, true).csv(w)
	case "markdown":
		return galleryView(doc, true).markdown(w)
	}
	return galleryView(doc, wide).table(w)
}
