package faults

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
)

// Document is a fault run as "simulate faults" writes it: where and how
// it ran, and a row per fault and strategy.
type Document struct {
	// Env is where the faults ran: private redis-server processes of the
	// binary on PATH, on this machine.
	output.Env
	Trials int `json:"trials"`
	// LockTTLMs, PauseMs and ReadTimeoutMs are the -ttl, -pause (with its
	// default applied) and -read-timeout flags; DurationS is -duration.
	LockTTLMs     float64  `json:"lock_ttl_ms"`
	PauseMs       float64  `json:"pause_ms"`
	ReadTimeoutMs float64  `json:"read_timeout_ms"`
	DurationS     float64  `json:"duration_s"`
	Seed          uint64   `json:"seed"`
	Rows          []Result `json:"rows"`
}

// NewDocument is the document of a run of cfg, without its rows, on
// redis-server version.
func NewDocument(cfg Config, version string) Document {
	pause := cfg.Pause
	if pause == 0 {
		pause = DefaultPause(cfg.LockTTL)
	}
	return Document{
		Env:       output.NewEnv(redisconn.ModeRedisServer, version),
		Trials:    cfg.Trials,
		LockTTLMs: latency.Milliseconds(cfg.LockTTL), PauseMs: latency.Milliseconds(pause),
		ReadTimeoutMs: latency.Milliseconds(cfg.ReadTimeout),
		DurationS:     latency.Seconds(cfg.Duration),
		Seed:          cfg.Seed,
	}
}

// Verdict lists, as FAULT/STRATEGY, the cells where a strategy expected
// to keep every guarantee (ExpectCorrect) showed a violation, and the
// cells that could not run.
func (d Document) Verdict() (unexpected, failed []string) {
	for _, r := range d.Rows {
		if ExpectCorrect(r.Fault, r.Variant) && r.Violations() > 0 {
			unexpected = append(unexpected, fmt.Sprintf("%s/%s", r.Fault, r.Variant))
		}
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("%s/%s", r.Fault, r.Variant))
		}
	}
	return unexpected, failed
}

// ExpectCorrect says whether variant v is expected to keep every data
// guarantee under fault f: the strategies that do not depend on a lease
// (watch, lua) and the fenced lease locks, under the pause, stall, kill
// and restart faults; every strategy across a failover with WAIT after
// each purchase (+wait); redlock+fencing.
func ExpectCorrect(f Fault, v Variant) bool {
	switch f {
	case Pause, PauseProcess, Stall, DebugSleep, ClientKill, Restart:
		return v == "watch" || v == "lua" || strings.HasSuffix(string(v), FencedSuffix)
	case RedlockRestart, RedlockClockJump:
		return v == RedlockFenced
	case FailoverMarket:
		// With WAIT, a purchase is acknowledged only once the replica
		// has it.
		return strings.Contains(string(v), WaitSuffix)
	}
	return false
}

// columns are the columns of the wide table and the markdown view.
var columns = []string{"fault", "strategy", "trials", "attempted", "ok", "failed", "unknown",
	"retried", "resolved", "audit", "history", "lock lost", "double holders", "stale writes",
	"lost", "duplicated", "violations"}

func cells(r Result) []string {
	n := strconv.Itoa
	return []string{string(r.Fault), string(r.Variant), n(r.Trials), n(r.Attempted), n(r.Ok), n(r.Failed),
		n(r.Unknown), n(r.Retried), n(r.Resolved), n(r.Audit.Total()), n(r.History.Total()), n(r.LockLost),
		n(r.DoubleHolders), n(r.StaleWrites), n(r.Lost), n(r.Duplicated), violationsCell(r)}
}

// violationsCell is a row's violations, or "error" for a cell that could
// not run all its trials (its message is under the table).
func violationsCell(r Result) string {
	if r.Error != "" {
		return "error"
	}
	return strconv.Itoa(r.Violations())
}

// csvColumns are the columns of the CSV: every count of a row, named as
// its JSON key.
var csvColumns = []string{"fault", "strategy", "trials", "attempted", "ok", "failed", "unknown",
	"retried", "resolved", "money_not_conserved", "negative_funds", "item_misplaced", "not_paid_once",
	"not_linearizable", "sold_twice", "lost_sales", "funds_mismatch", "undecided",
	"lock_lost", "double_holders", "stale_writes", "lost", "duplicated", "refused_applied", "violations", "error"}

func csvCells(r Result) []string {
	n := strconv.Itoa
	a, h := r.Audit, r.History
	return []string{string(r.Fault), string(r.Variant), n(r.Trials), n(r.Attempted), n(r.Ok), n(r.Failed),
		n(r.Unknown), n(r.Retried), n(r.Resolved), n(a.MoneyNotConserved), n(a.NegativeFunds),
		n(a.ItemMisplaced), n(a.NotPaidOnce), n(h[history.NotLinearizable]), n(h[history.SoldTwice]),
		n(h[history.LostSales]), n(h[history.FundsMismatch]), n(r.Undecided), n(r.LockLost),
		n(r.DoubleHolders), n(r.StaleWrites), n(r.Lost), n(r.Duplicated), n(r.RefusedApplied),
		n(r.Violations()), r.Error}
}

// The default table fits output.Width columns: trials (in the caption),
// the acknowledged and failed counts, and the audit and history split of
// the violations are left to -wide.
var narrowColumns = []string{"fault", "strategy", "attempted", "unknown", "lock\nlost", "double\nholders",
	"stale\nwrites", "violations"}

func narrowCells(r Result) []string {
	n := strconv.Itoa
	return []string{string(r.Fault), string(r.Variant), n(r.Attempted), n(r.Unknown), n(r.LockLost),
		n(r.DoubleHolders), n(r.StaleWrites), violationsCell(r)}
}

func (d Document) caption() string {
	return fmt.Sprintf("%d trials per cell; lock TTL %gms; workload %gs per trial; %d CPUs; redis-server %s; %s. "+
		"audit: money not conserved, negative funds, items misplaced (final state); history: items not "+
		"linearizable, sold twice, acknowledged sales lost, users whose funds do not match the purchases that "+
		"happened; retried: operations whose reply was lost, sent again with their operation ID until "+
		"answered (resolved); lost, duplicated: acknowledged purchases without a receipt after a failover, "+
		"receipts beyond the purchases asked for; violations = audit + history + stale writes + lost + duplicated.",
		d.Trials, d.LockTTLMs, d.DurationS, d.Machine.CPUs, d.Redis.Version, d.Machine.GoVersion)
}

// view is the table of d: every column when wide (and for markdown),
// else the columns that fit output.Width.
func (d Document) view(wide bool) report.View {
	cols, cellsOf := columns, cells
	if !wide {
		cols, cellsOf = narrowColumns, narrowCells
	}
	caption := d.caption()
	if !wide {
		caption += " -wide adds ok, failed, retried, resolved, lost, duplicated, and audit and history apart."
	}
	numeric := make([]bool, len(cols))
	for i := 2; i < len(cols); i++ {
		numeric[i] = true // every column but the fault and the strategy
	}
	v := report.View{Columns: cols, Numeric: numeric, Caption: output.Wrap(caption+d.errors(), output.Width)}
	for _, r := range d.Rows {
		v.Rows = append(v.Rows, cellsOf(r))
	}
	return v
}

// errors says, for the caption, which cells could not run and why; ""
// when every cell ran.
func (d Document) errors() string {
	var failed []string
	for _, r := range d.Rows {
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("%s / %s: %s", r.Fault, r.Variant, r.Error))
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return " Cells that could not run (error; their counts are those of the trials that ended before): " +
		strings.Join(failed, "; ") + "."
}

// Render writes d in format (one of report.Formats): the table has every
// column when wide.
func (d Document) Render(w io.Writer, format string, wide bool) error {
	switch format {
	case "json":
		return report.WriteJSON(w, d)
	case "csv":
		v := report.View{Columns: csvColumns}
		for _, r := range d.Rows {
			v.Rows = append(v.Rows, csvCells(r))
		}
		return v.CSV(w)
	case "markdown":
		return d.view(true).Markdown(w)
	}
	return d.view(wide).Table(w)
}

// Traces lists every FAULT/STRATEGY that WriteTimeline takes.
func Traces() []string {
	var out []string
	for _, f := range Traceable() {
		for _, v := range f.Variants() {
			out = append(out, string(f)+"/"+string(v))
		}
	}
	return out
}

// ParseTrace reads a FAULT/STRATEGY of Traces.
func ParseTrace(s string) (Fault, Variant, error) {
	if !slices.Contains(Traces(), s) {
		return "", "", fmt.Errorf("%q is not one of %s", s, strings.Join(Traces(), ", "))
	}
	f, v, _ := strings.Cut(s, "/")
	return Fault(f), Variant(v), nil
}

// WriteTimeline runs one trial of pause fault f under v, recorded, and
// writes its timeline on w (every command when verbose).
func WriteTimeline(ctx context.Context, f Fault, v Variant, cfg Config, verbose bool, w io.Writer) error {
	tl, _, err := Trace(ctx, f, v, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Fault %s: %s\n\n", f, f.Describe())
	return tl.Text(w, output.Width, verbose)
}

// RunFunc runs the trials of one fault under one variant (Run).
type RunFunc func(ctx context.Context, f Fault, v Variant, cfg Config) (Result, error)

// Cells are the cells of a run of cfg through run, a fault of fs and a
// variant each (only those of only, unless it is empty); each adds its
// row to doc, an error included (a cell that could not run is kept as an
// error and the run goes on), and when verbose its details to prog.
func Cells(fs []Fault, only []Variant, cfg Config, run RunFunc, verbose bool, doc *Document,
	prog *progress.Progress) []progress.Cell {
	var cells []progress.Cell
	for _, f := range fs {
		for _, v := range f.Variants() {
			if len(only) > 0 && !slices.Contains(only, v) {
				continue
			}
			label := fmt.Sprintf("%s / %s", f, v)
			cells = append(cells, progress.Cell{Label: label, Run: func(ctx context.Context) (string, bool, error) {
				res, err := run(ctx, f, v, cfg)
				if err != nil && ctx.Err() != nil {
					return "", false, err // interrupted: progress.Run says so
				}
				res.Fault, res.Variant = f, v
				if err != nil {
					res.Error = err.Error()
					doc.Rows = append(doc.Rows, res)
					return "ERROR, could not run: " + res.Error, false, nil
				}
				doc.Rows = append(doc.Rows, res)
				if verbose {
					prog.NoteEach("  ", res.Details)
				}
				return fmt.Sprintf("%s, %d unknown, %s", output.Plural(res.Attempted, "operation"), res.Unknown,
					output.Plural(res.Violations(), "violation")), false, nil
			}})
		}
	}
	return cells
}
