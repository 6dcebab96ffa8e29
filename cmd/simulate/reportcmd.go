package main

import (
	"context"
	"errors"
	"io"

	"github.com/lockmarket/lockmarket/internal/sim/report"
)

// reportCmd is "simulate report": render a saved results.json again, in
// any format and with fresh charts, without measuring anything.
func reportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newCmdFlags("simulate report", "usage: simulate report -in results.json [-format F] [-wide] [-out DIR]\n\n"+
		"Renders a saved run again (tables, CSV, JSON, charts) without measuring.\n\nFlags:\n", "", stderr)
	in := f.String("in", "", "a results.json written by 'simulate run -format json' or '-out' (required)")
	f.Check(func() error {
		if *in == "" {
			return errors.New("-in is required")
		}
		return nil
	})
	var format, out string
	var wide bool
	f.format(&format, report.Formats...)
	f.wide(&wide, "the book's figures in parentheses")
	f.out(&out, "results.md, results.csv, results.json and SVG charts")
	if err := f.Read(args); err != nil {
		return err
	}
	doc, err := report.ReadFile(*in)
	if err != nil {
		return err
	}
	return writeRun(runOptions{format: format, wide: wide, out: out}, doc, stdout, stderr)
}
