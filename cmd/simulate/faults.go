package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/faults"
	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report"
)

// errUnexpected is returned when a strategy that should keep every
// guarantee under a fault did not (exit status 1).
var errUnexpected = errors.New("a correct strategy showed violations")

// errCellsNotRun is returned when some cells of a fault run could not run
// to their end, and no strategy that should keep every guarantee showed a
// violation in the others (exit status 3).
var errCellsNotRun = errors.New("some cells could not run")

// runFaultCell runs one cell of "simulate faults"; tests replace it to
// make a cell fail.
var runFaultCell = faults.Run

const faultsUsage = `usage: simulate faults [flags]

Runs the market, and the lock recipes under it, against private
redis-server processes (started and stopped here; a redis-server binary
must be on PATH) while one fault at a time is injected, and reports per
fault and strategy the operations attempted, acknowledged (ok), failed
and of unknown outcome, and what the checkers found: the invariant audit
of the final state and the recorded history (no listing sold twice, no
acknowledged sale lost, every debit matched by a credit, per-listing
linearizability). See the README, "Faults and reliability".

A cell that cannot run (its set-up fails, a server does not start) is
reported as a row whose violations column says error, with its message
below the table (the "error" key in JSON and CSV), and the run goes on.

Exit status: 0 every cell ran and no strategy that should keep every
guarantee showed a violation; 1 one did (whether or not other cells
failed); 2 a bad flag; 130 no violation, but the run was interrupted;
3 no violation, but some cells could not run, or the run could not start.

Faults:
%s
Flags:
`

const faultsExample = `
Examples:
  simulate faults                                  # every fault, 3 trials per cell
  simulate faults -fault pause,pause-process -trials 10
  simulate faults -fault stall -strategies watch,fine,fine+fencing -v
  simulate faults -format markdown > results/faults.md
  simulate faults -fault stall,restart -format csv > faults.csv
`

// faultsOptions are the parsed flags of "simulate faults".
type faultsOptions struct {
	faults     []faults.Fault
	strategies []faults.Variant // empty: every variant of each fault
	cfg        faults.Config
	format     string
	wide       bool
	verbose    bool
	trace      *faultTrace // -timeline: one traced trial instead of the table
}

func parseFaultsFlags(args []string, stderr io.Writer) (faultsOptions, error) {
	var b strings.Builder
	for _, f := range faults.Faults {
		fmt.Fprintln(&b, output.Hanging(fmt.Sprintf("  %-17s ", f), f.Describe(), output.Width))
	}
	f := newCmdFlags("simulate faults", fmt.Sprintf(faultsUsage, b.String()), faultsExample, stderr)
	var o faultsOptions
	faultList := f.String("fault", "all", "comma-separated faults, or all")
	f.check(func() (err error) {
		if o.faults, err = faults.ParseFaults(*faultList); err != nil {
			return fmt.Errorf("-fault: %w", err)
		}
		return nil
	})
	known := map[faults.Variant]bool{}
	for _, f := range faults.Faults {
		for _, v := range f.Variants() {
			known[v] = true
		}
	}
	listFlag(f, &o.strategies, "strategies", "", "comma-separated strategies to run (watch, lua, coarse, coarse+fencing, fine, fine+fencing; mutex; redlock, redlock+fencing); empty: all that apply",
		"", func(name string) (faults.Variant, error) {
			if v := faults.Variant(name); known[v] {
				return v, nil
			}
			return "", fmt.Errorf("unknown strategy %q", name)
		})
	f.intIn(&o.cfg.Trials, "trials", 3, 1, 1000, "trials per fault and strategy, each on a fresh market")
	f.durationIn(&o.cfg.Duration, "duration", time.Second, 100*time.Millisecond, time.Hour, "workload length per trial of the stall, debug-sleep, client-kill and restart faults")
	f.durationIn(&o.cfg.LockTTL, "ttl", 200*time.Millisecond, time.Millisecond, time.Minute, "lease of the market's coarse and fine locks")
	f.DurationVar(&o.cfg.Pause, "pause", 0, "how long a holder is paused and Redis stalled (0: 2×ttl + 200ms)")
	f.check(func() error {
		switch {
		case o.cfg.Pause < 0 || o.cfg.Pause > time.Minute:
			return fmt.Errorf("-pause %v must be between 0 and 1m", o.cfg.Pause)
		case o.cfg.Pause > 0 && o.cfg.Pause <= o.cfg.LockTTL:
			return fmt.Errorf("-pause %v must exceed -ttl %v, or the holder is never paused past its lease", o.cfg.Pause, o.cfg.LockTTL)
		}
		return nil
	})
	f.durationIn(&o.cfg.ReadTimeout, "read-timeout", 300*time.Millisecond, time.Millisecond, time.Minute, "the clients' read timeout; a reply later than this makes the outcome unknown")
	f.seed(&o.cfg.Seed, "the workload's random choices")
	f.format(&o.format, report.Formats...)
	f.wide(&o.wide, "ok, failed, retried, resolved, lost, duplicated, and audit and history apart")
	f.verbose(&o.verbose, "a line per trial and the first violations of each cell to stderr; with -timeline, every command")
	trace := f.String("timeline", "", "print one trial of `FAULT/STRATEGY` (a pause fault) step by step instead of the table")
	f.check(func() error {
		if *trace == "" {
			return nil
		}
		t, err := parseFaultTrace(*trace)
		if err != nil {
			return fmt.Errorf("-timeline: %w", err)
		}
		o.trace = &t
		return nil
	})
	return o, f.parse(args)
}

// faultsDoc is the JSON output.
type faultsDoc struct {
	// Env is where the faults ran: private redis-server processes of the
	// binary on PATH, on this machine.
	output.Env
	Trials int `json:"trials"`
	// LockTTLMs, PauseMs and ReadTimeoutMs are the -ttl, -pause (with its
	// default applied) and -read-timeout flags; DurationS is -duration.
	LockTTLMs     float64         `json:"lock_ttl_ms"`
	PauseMs       float64         `json:"pause_ms"`
	ReadTimeoutMs float64         `json:"read_timeout_ms"`
	DurationS     float64         `json:"duration_s"`
	Seed          uint64          `json:"seed"`
	Rows          []faults.Result `json:"rows"`
}

// runFaults is "simulate faults".
func runFaults(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFaultsFlags(args, stderr)
	if err != nil {
		return err
	}
	bin, err := redisserver.Binary()
	if err != nil {
		return fmt.Errorf("%w: faults need a redis-server binary to start, stall, kill and restart (install redis-server): %w",
			errCellsNotRun, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable for the client process: %w", err)
	}
	o.cfg.ClientCommand = func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, exe, append([]string{"faults-client"}, args...)...)
	}
	if o.trace != nil {
		if o.verbose {
			o.cfg.Log = stderr
		}
		return printFaultTimeline(ctx, *o.trace, o.cfg, o.verbose, stdout)
	}
	doc := newFaultsDoc(o.cfg, redisVersion(bin))
	prog := newProgress(stderr)
	if o.verbose {
		o.cfg.Log = prog.notes()
	}
	cr, err := eachCell(ctx, prog, faultCells(o, &doc, prog))
	if err != nil {
		return err
	}
	cr.report(stderr, "simulate faults", len(doc.Rows))
	if err := renderFaults(stdout, o.format, o.wide, doc); err != nil {
		return err
	}
	return faultsVerdict(doc, cr)
}

// newFaultsDoc is the document of a run of cfg, without its rows, on
// redis-server version.
func newFaultsDoc(cfg faults.Config, version string) faultsDoc {
	pause := cfg.Pause
	if pause == 0 {
		pause = faults.DefaultPause(cfg.LockTTL)
	}
	return faultsDoc{
		Env:       output.NewEnv(redisconn.ModeRedisServer, version),
		Trials:    cfg.Trials,
		LockTTLMs: latency.Milliseconds(cfg.LockTTL), PauseMs: latency.Milliseconds(pause), ReadTimeoutMs: latency.Milliseconds(cfg.ReadTimeout),
		DurationS: latency.Seconds(cfg.Duration),
		Seed:      cfg.Seed,
	}
}

// faultCells are the cells of the run, a fault and a strategy each; each
// adds its row to doc, an error included, and with -v its details to
// prog.
func faultCells(o faultsOptions, doc *faultsDoc, prog *progress) []cell {
	var cells []cell
	for _, f := range o.faults {
		for _, v := range f.Variants() {
			if len(o.strategies) > 0 && !slices.Contains(o.strategies, v) {
				continue
			}
			cells = append(cells, cell{label: fmt.Sprintf("%s / %s", f, v), run: func(ctx context.Context) (string, bool, error) {
				res, err := runFaultCell(ctx, f, v, o.cfg)
				if err != nil && ctx.Err() != nil {
					return "", false, err // interrupted: eachCell says so
				}
				res.Fault, res.Variant = f, v
				if err != nil {
					// Keep the cell, as an error, and go on with the next.
					res.Error = err.Error()
					doc.Rows = append(doc.Rows, res)
					return "ERROR, could not run: " + res.Error, false, nil
				}
				doc.Rows = append(doc.Rows, res)
				if o.verbose {
					prog.noteEach("  ", res.Details)
				}
				return fmt.Sprintf("%s, %d unknown, %s", output.Plural(res.Attempted, "operation"), res.Unknown,
					output.Plural(res.Violations(), "violation")), false, nil
			}})
		}
	}
	return cells
}

// faultsVerdict is the run's outcome: errUnexpected when a strategy that
// should keep every guarantee did not, errCellsNotRun when some cells
// could not run, else nil.
func faultsVerdict(doc faultsDoc, cr cellsRun) error {
	var bad, failed []string
	for _, r := range doc.Rows {
		if expectCorrect(r.Fault, r.Variant) && r.Violations() > 0 {
			bad = append(bad, fmt.Sprintf("%s/%s", r.Fault, r.Variant))
		}
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("%s/%s", r.Fault, r.Variant))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", errUnexpected, strings.Join(bad, ", "))
	}
	if err := cr.err(len(doc.Rows)); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %d of %d: %s", errCellsNotRun, len(failed), cr.total, strings.Join(failed, ", "))
	}
	return nil
}

// expectCorrect says whether variant v is expected to keep every data
// guarantee under fault f: the strategies that do not depend on a lease
// (watch, lua) and the fenced lease locks, under the pause, stall, kill
// and restart faults; every strategy across a failover with WAIT after
// each purchase (+wait); redlock+fencing.
func expectCorrect(f faults.Fault, v faults.Variant) bool {
	switch f {
	case faults.Pause, faults.PauseProcess, faults.Stall, faults.DebugSleep, faults.ClientKill, faults.Restart:
		return v == "watch" || v == "lua" || strings.HasSuffix(string(v), faults.FencedSuffix)
	case faults.RedlockRestart, faults.RedlockClockJump:
		return v == faults.RedlockFenced
	case faults.FailoverMarket:
		// With WAIT, a purchase is acknowledged only once the replica
		// has it.
		return strings.Contains(string(v), faults.WaitSuffix)
	}
	return false
}

// redisVersion is the version of the redis-server binary bin, from its
// --version line ("Redis server v=7.0.15 sha=..."), or "unknown".
func redisVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	for f := range strings.FieldsSeq(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return "unknown"
}

// faultsColumns are the columns of the wide table and the markdown view.
var faultsColumns = []string{"fault", "strategy", "trials", "attempted", "ok", "failed", "unknown",
	"retried", "resolved", "audit", "history", "lock lost", "double holders", "stale writes",
	"lost", "duplicated", "violations"}

func faultsCells(r faults.Result) []string {
	n := strconv.Itoa
	return []string{string(r.Fault), string(r.Variant), n(r.Trials), n(r.Attempted), n(r.Ok), n(r.Failed), n(r.Unknown),
		n(r.Retried), n(r.Resolved), n(r.Audit.Total()), n(r.History.Total()), n(r.LockLost), n(r.DoubleHolders),
		n(r.StaleWrites), n(r.Lost), n(r.Duplicated), violationsCell(r)}
}

// violationsCell is a row's violations, or "error" for a cell that could
// not run all its trials (its message is under the table).
func violationsCell(r faults.Result) string {
	if r.Error != "" {
		return "error"
	}
	return strconv.Itoa(r.Violations())
}

// faultsCSVColumns are the columns of the CSV: every count of a row, named
// as its JSON key.
var faultsCSVColumns = []string{"fault", "strategy", "trials", "attempted", "ok", "failed", "unknown",
	"retried", "resolved", "money_not_conserved", "negative_funds", "item_misplaced", "not_paid_once",
	"not_linearizable", "sold_twice", "lost_sales", "funds_mismatch", "undecided",
	"lock_lost", "double_holders", "stale_writes", "lost", "duplicated", "refused_applied", "violations", "error"}

func faultsCSVCells(r faults.Result) []string {
	n := strconv.Itoa
	a, h := r.Audit, r.History
	return []string{string(r.Fault), string(r.Variant), n(r.Trials), n(r.Attempted), n(r.Ok), n(r.Failed), n(r.Unknown),
		n(r.Retried), n(r.Resolved), n(a.MoneyNotConserved), n(a.NegativeFunds), n(a.ItemMisplaced), n(a.NotPaidOnce),
		n(h[history.NotLinearizable]), n(h[history.SoldTwice]), n(h[history.LostSales]), n(h[history.FundsMismatch]), n(r.Undecided),
		n(r.LockLost), n(r.DoubleHolders), n(r.StaleWrites), n(r.Lost), n(r.Duplicated), n(r.RefusedApplied), n(r.Violations()),
		r.Error}
}

// The default table fits output.Width columns: trials (in the caption),
// the acknowledged and failed counts, and the audit and history split of
// the violations are left to -wide.
var faultsNarrowColumns = []string{"fault", "strategy", "attempted", "unknown", "lock\nlost", "double\nholders",
	"stale\nwrites", "violations"}

func faultsNarrowCells(r faults.Result) []string {
	n := strconv.Itoa
	return []string{string(r.Fault), string(r.Variant), n(r.Attempted), n(r.Unknown), n(r.LockLost), n(r.DoubleHolders),
		n(r.StaleWrites), violationsCell(r)}
}

// numericAfter2 marks every column of n as numeric except the first two.
func numericAfter2(n int) []bool {
	num := make([]bool, n)
	for i := 2; i < n; i++ {
		num[i] = true
	}
	return num
}

func faultsCaption(doc faultsDoc) string {
	return fmt.Sprintf("%d trials per cell; lock TTL %gms; workload %gs per trial; %d CPUs; redis-server %s; %s. "+
		"audit: money not conserved, negative funds, items misplaced (final state); history: items not "+
		"linearizable, sold twice, acknowledged sales lost, users whose funds do not match the purchases that "+
		"happened; retried: operations whose reply was lost, sent again with their operation ID until "+
		"answered (resolved); lost, duplicated: acknowledged purchases without a receipt after a failover, "+
		"receipts beyond the purchases asked for; violations = audit + history + stale writes + lost + duplicated.",
		doc.Trials, doc.LockTTLMs, doc.DurationS, doc.Machine.CPUs, doc.Redis.Version, doc.Machine.GoVersion)
}

// faultsView is the table of doc: every column when wide (and for
// markdown), else the columns that fit output.Width.
func faultsView(doc faultsDoc, wide bool) view {
	cols, cells := faultsColumns, faultsCells
	if !wide {
		cols, cells = faultsNarrowColumns, faultsNarrowCells
	}
	caption := faultsCaption(doc)
	if !wide {
		caption += " -wide adds ok, failed, retried, resolved, lost, duplicated, and audit and history apart."
	}
	v := view{columns: cols, numeric: numericAfter2(len(cols)), caption: output.Wrap(caption+faultsErrors(doc), output.Width)}
	for _, r := range doc.Rows {
		v.rows = append(v.rows, cells(r))
	}
	return v
}

// faultsErrors says, for the caption, which cells could not run and why;
// "" when every cell ran.
func faultsErrors(doc faultsDoc) string {
	var failed []string
	for _, r := range doc.Rows {
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

// renderFaults writes doc in format (one of report.Formats).
func renderFaults(w io.Writer, format string, wide bool, doc faultsDoc) error {
	switch format {
	case "json":
		return writeJSON(w, doc)
	case "csv":
		v := view{columns: faultsCSVColumns}
		for _, r := range doc.Rows {
			v.rows = append(v.rows, faultsCSVCells(r))
		}
		return v.csv(w)
	case "markdown":
		return faultsView(doc, true).markdown(w)
	}
	return faultsView(doc, wide).table(w)
}

// runFaultsClient is the hidden "simulate faults-client": the pausable
// client process of the pause-process fault (faults.ClientMain).
func runFaultsClient(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if code := faults.ClientMain(ctx, args, os.Stdin, stdout, stderr); code != 0 {
		return fmt.Errorf("%w: faults-client exited with %d", errUsage, code)
	}
	return nil
}
