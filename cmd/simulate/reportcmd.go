package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lockmarket/lockmarket/internal/report"
)

func init() {
	subcommands["report"] = subcommand{run: reportCmd,
		summary: "render a saved results.json again: table, markdown, CSV, JSON, charts"}
}

// reportCmd is "simulate report": render a saved results.json again, in
// any format and with fresh charts, without measuring anything.
func reportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "a results.json written by 'simulate run -format json' or '-out' (required)")
	format := fs.String("format", "table", "output: "+strings.Join(report.Formats, ", "))
	wide := fs.Bool("wide", false, "table: every column, the book's figures in parentheses (wider than 100 columns)")
	out := fs.String("out", "", "also write results.md, results.csv, results.json and SVG charts into this directory")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: simulate report -in results.json [-format F] [-wide] [-out DIR]\n\n"+
			"Renders a saved run again (tables, CSV, JSON, charts) without measuring.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	switch {
	case *in == "":
		return usagef(stderr, fs.Name(), "-in is required")
	case !isFormat(*format):
		return usagef(stderr, fs.Name(), "-format %q: want one of %s", *format, strings.Join(report.Formats, ", "))
	}
	data, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	doc, err := report.Decode(data)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	if len(doc.Rows) == 0 {
		return fmt.Errorf("%s: no rows", *in)
	}
	if err := report.Render(stdout, *format, doc, *wide); err != nil {
		return err
	}
	if *out != "" {
		files, err := report.WriteAll(*out, doc)
		if err != nil {
			return fmt.Errorf("-out %s: %w", *out, err)
		}
		fmt.Fprintf(stderr, "simulate: wrote %s into %s\n", strings.Join(files, ", "), *out)
	}
	return nil
}
