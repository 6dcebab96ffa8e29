package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/book"
)

// Formats are the output formats Render knows.
var Formats = []string{"table", "markdown", "csv", "json"}

// Render writes doc to w in format (one of Formats). The table fits a
// 100-column terminal unless wide is set, when it has every column.
func Render(w io.Writer, format string, doc Document, wide bool) error {
	switch format {
	case "table":
		return Table(w, doc, wide)
	case "markdown":
		return Markdown(w, doc)
	case "csv":
		return CSV(w, doc)
	case "json":
		return JSON(w, doc)
	}
	return fmt.Errorf("report: unknown format %q (want %s)", format, strings.Join(Formats, ", "))
}

// Columns are the headers of the wide table and the markdown view. A
// figure in parentheses is the book's for the same cell, scaled from 60 s
// to the run's duration (waits are not scaled).
var Columns = []string{
	"scenario", "strategy", "listed (book)", "bought (book)", "failed", "retries (book)",
	"retries/buy", "avg wait (book)", "p50 wait", "p99 wait", "ops/s", "bought/s (range)", "audit",
}

// numeric marks the columns that are right-aligned.
var numeric = []bool{false, false, true, true, true, true, true, true, true, true, true, true, false}

// NarrowColumns are the headers of the default table, which fits a
// 100-column terminal: the book's figures for a cell stand on a line of
// their own below ours (strategy "book"), and the p50 wait, the retries
// per purchase and the kinds of audit violations are left to the wide
// table.
var NarrowColumns = []string{
	"scenario", "strategy", "listed", "bought", "failed", "retries", "avg\nwait", "p99\nwait", "ops/s", "audit",
}

// narrowNumeric marks the right-aligned columns of NarrowColumns.
var narrowNumeric = []bool{false, false, true, true, true, true, true, true, true, false}

// bookFigures is the book's row for a cell of a run of durationS seconds
// per cell, formatted: its counts scaled to the cell's duration, or to its
// measured time if it was interrupted, and its mean wait as published.
type bookFigures struct {
	listed, bought, retries, avgWait string
}

func (r Row) bookFigures(durationS float64) (bookFigures, bool) {
	pub, ok := r.bookCell()
	if !ok {
		return bookFigures{}, false
	}
	if r.Interrupted || durationS <= 0 {
		durationS = r.ElapsedS
	}
	scale := durationS / book.Duration.Seconds()
	return bookFigures{
		listed:  fmtFigure(pub.Listed.Scale(scale)),
		bought:  fmtFigure(pub.Bought.Scale(scale)),
		retries: fmtFigure(pub.Retries.Scale(scale)),
		avgWait: pub.AvgWaitMs.Qualifier + fmtMs(pub.AvgWaitMs.Value, 1),
	}, true
}

// cells formats one row of a run of durationS seconds per cell for the
// wide table and the markdown view, the book's figures in parentheses.
func cells(r Row, durationS float64) []string {
	b, hasBook := r.bookFigures(durationS)
	withBook := func(ours, book string) string {
		if !hasBook {
			return ours
		}
		return ours + " (" + book + ")"
	}
	rpp := "-"
	if r.RetriesPerPurchase != nil {
		rpp = fmtRatio(*r.RetriesPerPurchase)
	}
	return []string{
		r.Scenario,
		r.Strategy,
		withBook(output.Thousands(r.Listed), b.listed),
		withBook(output.Thousands(r.Bought), b.bought),
		output.Thousands(r.FailedPurchases),
		withBook(output.Thousands(r.Retries), b.retries),
		rpp,
		withBook(fmtMs(r.AvgWaitMs, r.Bought), b.avgWait),
		fmtMs(r.P50WaitMs, r.Bought),
		fmtMs(r.P99WaitMs, r.Bought),
		output.Thousands(int64(math.Round(r.OpsPerS))),
		strings.TrimSuffix(r.boughtRange(), "/s"),
		auditText(r),
	}
}

// narrowCells formats one row for the default table: our figures, and the
// book's on a second line when it has the cell.
func narrowCells(r Row, durationS float64) [][]string {
	audit := "ok"
	if r.Violations > 0 {
		audit = fmt.Sprintf("FAIL %d", r.Violations)
	} else if r.Error != "" {
		audit = "ok (errors)"
	}
	out := [][]string{{
		r.Scenario,
		r.Strategy,
		output.Thousands(r.Listed),
		output.Thousands(r.Bought),
		output.Thousands(r.FailedPurchases),
		output.Thousands(r.Retries),
		fmtMs(r.AvgWaitMs, r.Bought),
		fmtMs(r.P99WaitMs, r.Bought),
		output.Thousands(int64(math.Round(r.OpsPerS))),
		audit,
	}}
	if b, ok := r.bookFigures(durationS); ok {
		out = append(out, []string{"", "book", b.listed, b.bought, "", b.retries, b.avgWait, "", "", ""})
	}
	return out
}

// fmtMs formats milliseconds with a unit that suits their size; "-" when
// there were no samples.
func fmtMs(v float64, samples int64) string {
	switch {
	case samples == 0:
		return "-"
	case v < 1:
		return fmt.Sprintf("%.0fµs", v*1000)
	case v < 10:
		return trimZeros(fmt.Sprintf("%.2f", v)) + "ms"
	case v < 100:
		return trimZeros(fmt.Sprintf("%.1f", v)) + "ms"
	case v < 999.5:
		return fmt.Sprintf("%.0fms", v)
	default:
		return trimZeros(fmt.Sprintf("%.2f", v/1000)) + "s"
	}
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

func fmtRatio(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.IsInf(v, 1):
		return "∞"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return output.Thousands(int64(math.Round(v)))
	}
}

// auditText is "ok", or the number of violations by kind.
func auditText(r Row) string {
	if r.Violations == 0 {
		if r.Error != "" {
			return "ok (errors)"
		}
		return "ok"
	}
	var kinds []string
	for _, k := range []struct {
		name string
		n    int
	}{{"money", r.Audit.MoneyNotConserved}, {"negative", r.Audit.NegativeFunds},
		{"misplaced", r.Audit.ItemMisplaced}, {"paid", r.Audit.NotPaidOnce}} {
		if k.n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k.name, k.n))
		}
	}
	return fmt.Sprintf("FAIL %d (%s)", r.Violations, strings.Join(kinds, ", "))
}

// Caption describes the run in one or two lines for the wide table and
// the markdown view.
func Caption(doc Document) string {
	return caption(doc, " In parentheses: the book's figures for the same cell, scaled from 60 s to this duration (waits as published).")
}

// narrowCaption describes the run under the default table, in lines that
// fit its width.
func narrowCaption(doc Document) string {
	text := ""
	for _, r := range doc.Rows {
		if _, ok := r.bookCell(); ok {
			text = " book: the book's figures for the cell above, scaled from 60 s to this duration (waits as published)."
			break
		}
	}
	text += " Waits are per bought item. -wide adds the p50 wait, retries per purchase and the audit's details."
	return output.Wrap(caption(doc, text), output.Width)
}

func caption(doc Document, book string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Redis: %s; %gs per cell%s, seed %d, pick %d; %s.", doc.Redis,
		doc.DurationS, roundsText(doc.Rounds), doc.Seed, doc.Pick, LinkText(doc))
	b.WriteString(book)
	if lt := LoadText(doc.LoadStart, doc.LoadEnd, doc.LoadPeak); lt != "" {
		b.WriteString(" " + lt)
	}
	if doc.Illustrative {
		b.WriteString("\nminiredis serves one command at a time inside this process: these figures are illustrative only, not a measurement of Redis.")
	}
	if doc.Interrupted {
		b.WriteString("\nInterrupted: the run stopped before its last cell; the last row ran for less than the duration, and its book figures are scaled to the time it ran.")
	}
	return b.String()
}

// roundsText says how a cell's time was sliced: "" for one slice, else
// " in 5 rounds (each a fresh market, interleaved with the other
// strategies')".
func roundsText(rounds int) string {
	if rounds < 2 {
		return ""
	}
	return fmt.Sprintf(" in %d rounds (slices run in turn across the strategies, each in a fresh market)", rounds)
}

// NewTable is a terminal table with headers as written (no upper case)
// and cells never wrapped (a cell's own line breaks are kept); the columns
// marked numeric are right-aligned, the others left (nil: tablewriter's
// default alignment). More options may follow.
func NewTable(w io.Writer, numeric []bool, more ...tablewriter.Option) *tablewriter.Table {
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	}
	if numeric != nil {
		align := make(tw.Alignment, len(numeric))
		for i, num := range numeric {
			align[i] = tw.AlignLeft
			if num {
				align[i] = tw.AlignRight
			}
		}
		opts = append(opts, tablewriter.WithAlignment(align))
	}
	return tablewriter.NewTable(w, append(opts, more...)...)
}

// Table writes the terminal table (tablewriter) and its caption: by
// default the columns that fit a 100-column terminal (NarrowColumns), with
// wide every column (Columns). A run with -markets or -prefill adds the
// resource table.
func Table(w io.Writer, doc Document, wide bool) error {
	cols, num, capt := NarrowColumns, narrowNumeric, narrowCaption(doc)
	if wide {
		cols, num, capt = Columns, numeric, Caption(doc)
	}
	t := NewTable(w, num)
	t.Header(toAny(cols)...)
	for _, r := range doc.Rows {
		lines := [][]string{cells(r, doc.DurationS)}
		if !wide {
			lines = narrowCells(r, doc.DurationS)
		}
		for _, l := range lines {
			if err := t.Append(toAny(l)...); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, capt); err != nil {
		return err
	}
	if !doc.HasResources() {
		return writeReading(w, doc, "")
	}
	cols, num, capt = NarrowResourceColumns, narrowResourceNumeric, output.Wrap(ResourceCaption, output.Width)
	if wide {
		cols, num, capt = ResourceColumns, nil, ResourceCaption
	}
	rt := NewTable(w, num)
	rt.Header(toAny(cols)...)
	for _, r := range doc.Rows {
		c := resourceCells(r)
		if !wide {
			c = narrowResourceCells(c)
		}
		if err := rt.Append(toAny(c)...); err != nil {
			return err
		}
	}
	if err := rt.Render(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, capt); err != nil {
		return err
	}
	return writeReading(w, doc, "")
}

// ResourceColumns are the headers of the second table the table and
// markdown views print when a run used -markets or -prefill.
var ResourceColumns = []string{
	"scenario", "strategy", "markets", "prefill", "prefill time", "Redis memory", "B/listing",
	"ZSET B/listing", "client RSS", "client CPU", "Redis CPU", "Redis cmds/s",
}

// NarrowResourceColumns are the headers of the resource table that fits
// a 100-column terminal: the wide one without the prefill time, Redis's
// used memory and the ZSET's share.
var NarrowResourceColumns = []string{
	"scenario", "strategy", "markets", "prefill", "B/listing", "client\nRSS", "client\nCPU", "Redis\nCPU", "Redis\ncmds/s",
}

// narrowResource picks NarrowResourceColumns out of ResourceColumns.
var narrowResource = []int{0, 1, 2, 3, 6, 8, 9, 10, 11}

var narrowResourceNumeric = []bool{false, false, true, true, true, true, true, true, true}

func narrowResourceCells(wide []string) []string {
	out := make([]string, len(narrowResource))
	for i, j := range narrowResource {
		out[i] = wide[j]
	}
	return out
}

// ResourceCaption explains ResourceColumns.
const ResourceCaption = "Redis memory: used_memory after the prefill (all masters); B/listing: its growth during the prefill per listing; " +
	"ZSET B/listing: MEMORY USAGE of the market ZSET per listing; client RSS: the simulator's VmRSS when the workers stopped; " +
	"CPU: seconds used while the workers ran, as a share of one core (Redis: all masters together); Redis cmds/s: total_commands_processed per second."

func resourceCells(r Row) []string {
	dash := func(ok bool, v string) string {
		if !ok {
			return "-"
		}
		return v
	}
	run := r.ElapsedS + r.DrainS
	pct := func(cpu float64) string {
		return dash(run > 0 && cpu > 0, fmt.Sprintf("%.0f%%", 100*cpu/run))
	}
	perListing := func(b int64) string {
		n := r.Prefill * max(r.Markets, 1)
		return dash(n > 0 && b > 0, fmt.Sprintf("%.0f", float64(b)/float64(n)))
	}
	return []string{
		r.Scenario, r.Strategy, strconv.Itoa(max(r.Markets, 1)), output.Thousands(int64(r.Prefill)),
		dash(r.Prefill > 0, fmt.Sprintf("%.1fs", r.PrefillS)),
		dash(r.RedisUsedMemoryBytes > 0, mib(r.RedisUsedMemoryBytes)),
		dash(r.BytesPerListing > 0, fmt.Sprintf("%.0f", r.BytesPerListing)),
		perListing(r.MarketZSetBytes),
		dash(r.ClientRSSBytes > 0, mib(r.ClientRSSBytes)),
		pct(r.ClientCPUS), pct(r.RedisCPUS),
		dash(r.RedisCommands > 0, output.Thousands(int64(math.Round(r.RedisCommandsPerS())))),
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// TerminalTable writes a NewTable with these columns and rows (options as
// NewTable's).
func TerminalTable(w io.Writer, columns []string, numeric []bool, rows [][]string, more ...tablewriter.Option) error {
	t := NewTable(w, numeric, more...)
	t.Header(toAny(columns)...)
	for _, r := range rows {
		if err := t.Append(toAny(r)...); err != nil {
			return err
		}
	}
	return t.Render()
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// MarkdownTable writes a GitHub-flavoured markdown table to b: the
// columns, aligned right where numeric says so (left beyond its end), then
// the rows. A "|" in a cell is escaped and a line break becomes a space.
func MarkdownTable(b *strings.Builder, columns []string, numeric []bool, rows [][]string) {
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			c = strings.ReplaceAll(c, "\n", " ")
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	row(columns)
	b.WriteString("|")
	for i := range columns {
		if i < len(numeric) && numeric[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		row(r)
	}
}

// figureColumns marks every column numeric but the first two (scenario or
// round trip, and strategy or client).
func figureColumns(n int) []bool {
	numeric := make([]bool, n)
	for i := 2; i < n; i++ {
		numeric[i] = true
	}
	return numeric
}

// Markdown writes a GitHub-flavoured markdown table and its caption.
func Markdown(w io.Writer, doc Document) error {
	var b strings.Builder
	rows := make([][]string, len(doc.Rows))
	for i, r := range doc.Rows {
		rows[i] = cells(r, doc.DurationS)
	}
	MarkdownTable(&b, Columns, numeric, rows)
	b.WriteString("\n")
	for line := range strings.Lines(Caption(doc)) {
		b.WriteString(strings.TrimRight(line, "\n") + "\n\n")
	}
	if doc.HasResources() {
		rows := make([][]string, len(doc.Rows))
		for i, r := range doc.Rows {
			rows[i] = resourceCells(r)
		}
		MarkdownTable(&b, ResourceColumns, figureColumns(len(ResourceColumns)), rows)
		b.WriteString("\n" + ResourceCaption + "\n\n")
	}
	if err := writeReading(&b, doc, "\n"); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CSVHeader is the first line of the CSV output: one column per field of
// a row, the book's figures last (empty where the book has no cell).
var CSVHeader = []string{
	"scenario", "listers", "buyers", "strategy", "listed", "bought", "failed_purchases",
	"retries", "lock_waits", "avg_wait_ms", "p50_wait_ms", "p99_wait_ms", "max_wait_ms",
	"ops_per_s", "bought_per_s", "retries_per_purchase", "violations",
	"elapsed_s", "drain_s", "failed_listing_not_found", "failed_price_changed", "failed_insufficient_funds",
	"failed_contended", "failed_other", "failed_lists", "list_retries", "list_lock_waits",
	"lock_lost", "empty_polls", "money_not_conserved", "negative_funds", "item_misplaced",
	"not_paid_once", "rounds", "bought_per_s_min", "bought_per_s_max", "ops_per_s_min", "ops_per_s_max",
	"book_listed", "book_bought", "book_retries", "book_avg_wait_ms",
	"book_upper_bounds", "book_source",
}

// CSV writes one line per row with CSVHeader's columns.
func CSV(w io.Writer, doc Document) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, r := range doc.Rows {
		rpp := ""
		if r.RetriesPerPurchase != nil {
			rpp = f(*r.RetriesPerPurchase)
		}
		rec := []string{
			r.Scenario, strconv.Itoa(r.Listers), strconv.Itoa(r.Buyers), r.Strategy,
			i(r.Listed), i(r.Bought), i(r.FailedPurchases), i(r.Retries), i(r.LockWaits),
			f(r.AvgWaitMs), f(r.P50WaitMs), f(r.P99WaitMs), f(r.MaxWaitMs),
			f(r.OpsPerS), f(r.BoughtPerS), rpp, strconv.Itoa(r.Violations),
			f(r.ElapsedS), f(r.DrainS), i(r.Failures.ListingNotFound), i(r.Failures.PriceChanged),
			i(r.Failures.InsufficientFunds), i(r.Failures.Contended), i(r.Failures.Other),
			i(r.FailedLists), i(r.ListRetries), i(r.ListLockWaits), i(r.LockLost), i(r.EmptyPolls),
			strconv.Itoa(r.Audit.MoneyNotConserved), strconv.Itoa(r.Audit.NegativeFunds),
			strconv.Itoa(r.Audit.ItemMisplaced), strconv.Itoa(r.Audit.NotPaidOnce),
			strconv.Itoa(len(r.Slices)), f(r.BoughtPerSMin), f(r.BoughtPerSMax), f(r.OpsPerSMin), f(r.OpsPerSMax),
		}
		if b := r.Book; b != nil {
			rec = append(rec, f(b.Listed), f(b.Bought), f(b.Retries), f(b.AvgWaitMs),
				strings.Join(b.UpperBounds, ";"), b.Source)
		} else {
			rec = append(rec, "", "", "", "", "", "")
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// JSON writes doc as one indented JSON object.
func JSON(w io.Writer, doc Document) error {
	if doc.Rows == nil {
		doc.Rows = []Row{}
	}
	doc.Verdict = Judge(doc)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// writeReading writes the run's Reading under a "Reading:" line, each of
// its paragraphs followed by sep (markdown needs a blank line between
// paragraphs).
func writeReading(w io.Writer, doc Document, sep string) error {
	lines := Reading(doc)
	if len(lines) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w, "Reading:"+sep); err != nil {
		return err
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, sep)
	return err
}
