package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/lockmarket/lockmarket/internal/gallery"
	"github.com/lockmarket/lockmarket/internal/redisconn"
)

func init() { subcommands["gallery"] = runGallery }

const galleryUsage = `usage: simulate gallery [flags]

Reproduces the failure of each flawed lock recipe (package locking/flawed)
in the market, by injecting its fault at the vulnerable point, and then runs
the same scenario with the recipe that fixes it. Each row counts the
violations seen: market audit violations (items sold twice, sales not paid
exactly once), purchases blocked by a lock that never expires, or reads that
saw a writer's half-done work.

Flags:
`

const galleryExample = `
Example:
  simulate gallery -recipes 4,5,6 -format json
`

// galleryOptions are the parsed flags of "simulate gallery".
type galleryOptions struct {
	redis   string
	format  string
	recipes []string // recipe numbers; empty: all
	verbose bool
}

func parseGalleryFlags(args []string, stderr io.Writer) (galleryOptions, error) {
	fs := flag.NewFlagSet("simulate gallery", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o galleryOptions
	var recipes string
	fs.StringVar(&o.redis, "redis", "auto", "auto, a redis:// URL, or comma-separated cluster node addresses")
	fs.StringVar(&o.format, "format", "table", "output: table, markdown or json")
	fs.StringVar(&recipes, "recipes", "", "comma-separated recipe numbers to run (1,2,3,4,5,6,9,11); empty: all")
	fs.BoolVar(&o.verbose, "v", false, "print what each flawed run broke to stderr")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), galleryUsage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), galleryExample)
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return o, err
	}
	bad := func(format string, a ...any) (galleryOptions, error) {
		return o, usagef(stderr, fs.Name(), format, a...)
	}
	known := galleryNumbers()
	for r := range strings.SplitSeq(recipes, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !slices.Contains(known, r) {
			return bad("-recipes: no recipe %q (want some of %s)", r, strings.Join(known, ","))
		}
		if !slices.Contains(o.recipes, r) {
			o.recipes = append(o.recipes, r)
		}
	}
	if !slices.Contains([]string{"table", "markdown", "json"}, o.format) {
		return bad("-format %q: want table, markdown or json", o.format)
	}
	return o, nil
}

// galleryNumbers lists the recipe numbers of the scenarios ("1", "2", ...).
func galleryNumbers() []string {
	var out []string
	for _, s := range gallery.Scenarios() {
		out = append(out, recipeNumber(s.Recipe))
	}
	return out
}

func recipeNumber(recipe string) string {
	n, _, _ := strings.Cut(recipe, " ")
	return n
}

// galleryDoc is the JSON output.
type galleryDoc struct {
	Redis galleryRedis  `json:"redis"`
	Rows  []gallery.Row `json:"rows"`
}

type galleryRedis struct {
	Mode    string `json:"mode"`
	Version string `json:"version"`
}

func runGallery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseGalleryFlags(args, stderr)
	if err != nil {
		return err
	}
	conn, err := redisconn.Open(ctx, o.redis, stderr)
	if err != nil {
		return err
	}
	defer conn.Close()
	env := gallery.Env{Client: conn.Client, Mini: conn.Mini}
	doc := galleryDoc{Redis: galleryRedis{Mode: conn.Mode, Version: conn.Version}, Rows: []gallery.Row{}}
	for _, s := range gallery.Scenarios() {
		if len(o.recipes) > 0 && !slices.Contains(o.recipes, recipeNumber(s.Recipe)) {
			continue
		}
		row, err := s.Run(ctx, env)
		if err != nil {
			return err
		}
		if o.verbose {
			fmt.Fprintf(stderr, "%s: %d violations\n", row.Recipe, row.Violations)
			for _, d := range row.Details {
				fmt.Fprintf(stderr, "  %s\n", d)
			}
			for _, d := range row.FixedDetails {
				fmt.Fprintf(stderr, "  fixed run: %s\n", d)
			}
		}
		doc.Rows = append(doc.Rows, row)
	}
	return writeGallery(stdout, o.format, doc)
}

var galleryColumns = []string{"recipe", "fault", "consequence", "violations", "fixed_by", "fixed_violations"}

func galleryCells(r gallery.Row) []string {
	return []string{r.Recipe, r.Fault, r.Consequence, strconv.Itoa(r.Violations), r.FixedBy, strconv.Itoa(r.FixedViolations)}
}

func writeGallery(w io.Writer, format string, doc galleryDoc) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	case "markdown":
		var b strings.Builder
		row := func(cells []string) {
			for i := range cells {
				cells[i] = strings.ReplaceAll(cells[i], "|", `\|`)
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
		row(slices.Clone(galleryColumns))
		row([]string{"---", "---", "---", "---:", "---", "---:"})
		for _, r := range doc.Rows {
			row(galleryCells(r))
		}
		fmt.Fprintf(&b, "\nRedis: %s %s.\n", doc.Redis.Mode, doc.Redis.Version)
		_, err := io.WriteString(w, b.String())
		return err
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithAlignment(tw.Alignment{tw.AlignLeft, tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignLeft, tw.AlignRight}),
	)
	cells := make([]any, len(galleryColumns))
	for i, c := range galleryColumns {
		cells[i] = c
	}
	t.Header(cells...)
	for _, r := range doc.Rows {
		row := galleryCells(r)
		cells := make([]any, len(row))
		for i, c := range row {
			cells[i] = c
		}
		if err := t.Append(cells...); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Redis: %s %s.\n", doc.Redis.Mode, doc.Redis.Version)
	return err
}
