package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/lockmarket/lockmarket/internal/sim/report"
)

// view is the tabular output of a subcommand: the columns, which of them
// are numeric (right-aligned), one line of cells per row, and a caption.
// ruled draws a line between rows, for cells of several lines.
type view struct {
	columns []string
	numeric []bool
	rows    [][]string
	caption string
	ruled   bool
}

// table writes v as a terminal table, then its caption.
func (v view) table(w io.Writer) error {
	var opts []tablewriter.Option
	if v.ruled {
		opts = append(opts, tablewriter.WithRendition(tw.Rendition{
			Settings: tw.Settings{Separators: tw.Separators{BetweenRows: tw.On}},
		}))
	}
	if err := report.TerminalTable(w, v.columns, v.numeric, v.rows, opts...); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, v.caption)
	return err
}

// markdown writes v as a GitHub-flavoured markdown table, then its
// caption.
func (v view) markdown(w io.Writer) error {
	var b strings.Builder
	report.MarkdownTable(&b, v.columns, v.numeric, v.rows)
	b.WriteString("\n" + v.caption + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// csv writes v's columns and rows as CSV (no caption).
func (v view) csv(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(v.columns); err != nil {
		return err
	}
	if err := cw.WriteAll(v.rows); err != nil {
		return err
	}
	return cw.Error()
}

// writeJSON writes doc as one indented JSON object.
func writeJSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
