package gallery

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

// Document is the gallery as "simulate gallery" writes it: where it ran
// and a row per recipe.
type Document struct {
	// Env is where the scenarios ran.
	output.Env
	Rows []Row `json:"rows"`
}

// Numbers lists the recipe numbers of the scenarios ("1", "2", ...).
func Numbers() []string {
	var out []string
	for _, s := range Scenarios() {
		out = append(out, s.Recipe.ID)
	}
	return out
}

// columns are the columns of the wide table, the markdown view and the
// CSV, named as the JSON keys.
var columns = []string{"recipe", "fault", "consequence", "violations", "fixed_by", "fixed_violations"}

var numeric = []bool{false, false, false, true, false, true}

func cells(r Row) []string {
	return []string{r.Recipe.String(), r.Fault, r.Consequence, strconv.Itoa(r.Violations), r.FixedBy,
		strconv.Itoa(r.FixedViolations)}
}

// The default table fits output.Width columns: the fault is left to -wide,
// and the recipe, its consequence and its fix are wrapped to these widths.
var (
	narrowColumns = []string{"recipe", "consequence", "violations", "fixed by", "violations\nafter fix"}
	narrowNumeric = []bool{false, false, true, false, true}
)

const (
	recipeWidth      = 16
	consequenceWidth = 28
	fixedByWidth     = 20
)

func narrowCells(r Row) []string {
	return []string{
		output.Wrap(r.Recipe.String(), recipeWidth), output.Wrap(r.Consequence, consequenceWidth),
		output.Thousands(int64(r.Violations)), output.Wrap(r.FixedBy, fixedByWidth),
		output.Thousands(int64(r.FixedViolations)),
	}
}

const narrowCaption = "violations: market audit violations (an item sold twice, a sale not paid exactly once), " +
	"purchases blocked by a lock that never expires, or reads that saw a writer's half-done work, " +
	"with the flawed recipe under its fault; after fix: the same with the recipe that fixes it. " +
	"-wide adds the fault injected."

// view is the table of d: every column when wide (and for markdown and
// CSV), else the columns that fit output.Width.
func (d Document) view(wide bool) report.View {
	redis := fmt.Sprintf("Redis: %s.", d.Redis)
	if wide {
		v := report.View{Columns: columns, Numeric: numeric, Caption: redis}
		for _, r := range d.Rows {
			v.Rows = append(v.Rows, cells(r))
		}
		return v
	}
	v := report.View{Columns: narrowColumns, Numeric: narrowNumeric, Ruled: true,
		Caption: output.Wrap(redis+" "+narrowCaption, output.Width)}
	for _, r := range d.Rows {
		v.Rows = append(v.Rows, narrowCells(r))
	}
	return v
}

// Render writes d in format (one of report.Formats): the table has every
// column when wide.
func (d Document) Render(w io.Writer, format string, wide bool) error {
	switch format {
	case "json":
		return report.WriteJSON(w, d)
	case "csv":
		return d.view(true).CSV(w)
	case "markdown":
		return d.view(true).Markdown(w)
	}
	return d.view(wide).Table(w)
}

// WriteTimeline runs recipe n (its number) flawed and fixed in env and
// writes both timelines on w (every command when verbose).
func WriteTimeline(ctx context.Context, env Env, n string, verbose bool, w io.Writer) error {
	s, err := ScenarioOf(n)
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
		if err := tl.Text(w, output.Width, verbose); err != nil {
			return err
		}
	}
	return nil
}

// WriteTimelines writes a recipe's timelines into dir:
// recipe-N-flawed.svg, recipe-N-fixed.svg and recipe-N.txt (both as text).
func WriteTimelines(dir string, row Row) error {
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
		name := filepath.Join(dir, fmt.Sprintf("recipe-%s-%s.svg", n, tl.name))
		if err := os.WriteFile(name, svg.Bytes(), 0o644); err != nil {
			return err
		}
		if tl.name == "fixed" {
			txt.WriteString("\n")
		}
		if err := tl.t.Text(&txt, output.Width, false); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "recipe-"+n+".txt"), txt.Bytes(), 0o644)
}

// Cells are the cells of the gallery in env, a recipe each (only those of
// only, unless it is empty); each adds its row to doc, when verbose its
// details to prog, and when out is not "" its timelines into that
// folder (WriteTimelines).
func Cells(env Env, only []string, verbose bool, out string, doc *Document, prog *progress.Progress) []progress.Cell {
	var cells []progress.Cell
	for _, s := range Scenarios() {
		if len(only) > 0 && !slices.Contains(only, s.Recipe.ID) {
			continue
		}
		cells = append(cells, progress.Cell{Label: s.Recipe.String(), Run: func(ctx context.Context) (string, bool, error) {
			row, err := s.Run(ctx, env)
			if err != nil {
				return "", false, err
			}
			doc.Rows = append(doc.Rows, row)
			if verbose {
				prog.NoteEach("  ", row.Details)
				prog.NoteEach("  fixed run: ", row.FixedDetails)
			}
			if out != "" {
				if err := WriteTimelines(out, row); err != nil {
					return "", false, err
				}
			}
			return fmt.Sprintf("%s; fixed: %d", output.Plural(row.Violations, "violation"), row.FixedViolations),
				false, nil
		}})
	}
	return cells
}
