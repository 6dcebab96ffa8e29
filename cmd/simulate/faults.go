package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/faults"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
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

// faultTrace is a pause fault and a strategy to trace.
type faultTrace struct {
	fault    faults.Fault
	strategy faults.Variant
}

func parseFaultsFlags(args []string, stderr io.Writer) (faultsOptions, error) {
	var b strings.Builder
	for _, f := range faults.Faults {
		fmt.Fprintln(&b, output.Hanging(fmt.Sprintf("  %-17s ", f), f.Describe(), output.Width))
	}
	f := newCmdFlags("simulate faults", fmt.Sprintf(faultsUsage, b.String()), faultsExample, stderr)
	var o faultsOptions
	faultList := f.String("fault", "all", "comma-separated faults, or all")
	f.Check(func() (err error) {
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
	output.List(f.Flags, &o.strategies, "strategies", "", "comma-separated strategies to run (watch, lua, coarse, coarse+fencing, fine, fine+fencing; mutex; redlock, redlock+fencing); empty: all that apply",
		"", func(name string) (faults.Variant, error) {
			if v := faults.Variant(name); known[v] {
				return v, nil
			}
			return "", fmt.Errorf("unknown strategy %q", name)
		})
	f.IntIn(&o.cfg.Trials, "trials", 3, 1, 1000, "trials per fault and strategy, each on a fresh market")
	f.DurationIn(&o.cfg.Duration, "duration", time.Second, 100*time.Millisecond, time.Hour, "workload length per trial of the stall, debug-sleep, client-kill and restart faults")
	f.DurationIn(&o.cfg.LockTTL, "ttl", 200*time.Millisecond, time.Millisecond, time.Minute, "lease of the market's coarse and fine locks")
	f.DurationVar(&o.cfg.Pause, "pause", 0, "how long a holder is paused and Redis stalled (0: 2×ttl + 200ms)")
	f.Check(func() error {
		switch {
		case o.cfg.Pause < 0 || o.cfg.Pause > time.Minute:
			return fmt.Errorf("-pause %v must be between 0 and 1m", o.cfg.Pause)
		case o.cfg.Pause > 0 && o.cfg.Pause <= o.cfg.LockTTL:
			return fmt.Errorf("-pause %v must exceed -ttl %v, or the holder is never paused past its lease", o.cfg.Pause, o.cfg.LockTTL)
		}
		return nil
	})
	f.DurationIn(&o.cfg.ReadTimeout, "read-timeout", 300*time.Millisecond, time.Millisecond, time.Minute, "the clients' read timeout; a reply later than this makes the outcome unknown")
	f.seed(&o.cfg.Seed, "the workload's random choices")
	f.format(&o.format, report.Formats...)
	f.wide(&o.wide, "ok, failed, retried, resolved, lost, duplicated, and audit and history apart")
	f.verbose(&o.verbose, "a line per trial and the first violations of each cell to stderr; with -timeline, every command")
	trace := f.String("timeline", "", "print one trial of `FAULT/STRATEGY` (a pause fault) step by step instead of the table")
	f.Check(func() error {
		if *trace == "" {
			return nil
		}
		f, v, err := faults.ParseTrace(*trace)
		if err != nil {
			return fmt.Errorf("-timeline: %w", err)
		}
		o.trace = &faultTrace{f, v}
		return nil
	})
	return o, f.Read(args)
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
		return faults.WriteTimeline(ctx, o.trace.fault, o.trace.strategy, o.cfg, o.verbose, stdout)
	}
	doc := faults.NewDocument(o.cfg, redisserver.BinaryVersion(bin))
	prog := progress.New(stderr)
	if o.verbose {
		o.cfg.Log = prog.Notes()
	}
	cells := faults.Cells(o.faults, o.strategies, o.cfg, runFaultCell, o.verbose, &doc, prog)
	cr, err := progress.Run(ctx, prog, cells)
	if err != nil {
		return err
	}
	cr.Report(stderr, "simulate faults", len(doc.Rows))
	if err := doc.Render(stdout, o.format, o.wide); err != nil {
		return err
	}
	return faultsVerdict(doc, cr)
}

// faultsVerdict is the run's outcome: errUnexpected when a strategy that
// should keep every guarantee did not, errCellsNotRun when some cells
// could not run, else nil.
func faultsVerdict(doc faults.Document, cr progress.Outcome) error {
	bad, failed := doc.Verdict()
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", errUnexpected, strings.Join(bad, ", "))
	}
	if err := cr.Err(len(doc.Rows)); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %d of %d: %s", errCellsNotRun, len(failed), cr.Total, strings.Join(failed, ", "))
	}
	return nil
}

// runFaultsClient is the hidden "simulate faults-client": the pausable
// client process of the pause-process fault (faults.ClientMain).
func runFaultsClient(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if code := faults.ClientMain(ctx, args, os.Stdin, stdout, stderr); code != 0 {
		return fmt.Errorf("%w: faults-client exited with %d", output.ErrUsage, code)
	}
	return nil
}
