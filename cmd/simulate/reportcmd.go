package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lockmarket/lockmarket/internal/report/output"
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
	if err := report.Render(stdout, format, doc, wide); err != nil {
		return err
	}
	if out != "" {
		files, err := report.WriteAll(out, doc)
		if err != nil {
			return fmt.Errorf("-out %s: %w", out, err)
		}
		fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate: wrote %s into %s", strings.Join(files, ", "), out), output.Width))
	}
	return nil
}
