package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// View is the tabular output of a command: the columns, which of them
// are numeric (right-aligned), one line of cells per row, and a caption.
// Ruled draws a line between rows, for cells of several lines.
type View struct {
	Columns []string
	Numeric []bool
	Rows    [][]string
	Caption string
	Ruled   bool
}

// Table writes v as a terminal table, then its caption.
func (v View) Table(w io.Writer) error {
	var opts []tablewriter.Option
	if v.Ruled {
		opts = append(opts, tablewriter.WithRendition(tw.Rendition{
			Settings: tw.Settings{Separators: tw.Separators{BetweenRows: tw.On}},
		}))
	}
	if err := TerminalTable(w, v.Columns, v.Numeric, v.Rows, opts...); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, v.Caption)
	return err
}

// Markdown writes v as a GitHub-flavoured markdown table, then its
// caption.
func (v View) Markdown(w io.Writer) error {
	var b strings.Builder
	MarkdownTable(&b, v.Columns, v.Numeric, v.Rows)
	b.WriteString("\n" + v.Caption + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// CSV writes v's columns and rows as CSV (no caption).
func (v View) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(v.Columns); err != nil {
		return err
	}
	if err := cw.WriteAll(v.Rows); err != nil {
		return err
	}
	return cw.Error()
}

// WriteJSON writes doc as one indented JSON object.
func WriteJSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
