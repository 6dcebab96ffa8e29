package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/probe"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/report"
)

// cell is one measurement of a subcommand (a scenario under a strategy, a
// fault under a strategy, a recipe): its label in the progress lines and
// in errors, and its run, which keeps its result and returns the figures
// of its progress line. A run that ctx's end cut short says so
// (interrupted); what it measured until then is kept.
type cell struct {
	label string
	run   func(ctx context.Context) (summary string, interrupted bool, err error)
}

// cellsRun is what eachCell did: how many cells of how many ran to their
// end, and whether ctx's end stopped the run.
type cellsRun struct {
	done, total int
	interrupted bool
	elapsed     time.Duration
	// slices, when more than 1, says each measurement is a cell's slice:
	// total/slices cells of slices each.
	slices int
}

// eachCell runs cells one at a time, each announced on prog and ended
// there with its figures, the time it took and the time the rest should
// take. It stops before a cell once ctx has ended, after a cell that was
// interrupted, and at the first cell that fails: that error, naming the
// cell, is returned (a failure caused by ctx's end counts as an
// interruption).
func eachCell(ctx context.Context, prog *progress, cells []cell) (cellsRun, error) {
	r := cellsRun{total: len(cells)}
	prog.mu.Lock()
	prog.total = len(cells)
	prog.mu.Unlock()
	start := time.Now()
	for _, c := range cells {
		if ctx.Err() != nil {
			r.interrupted = true
			break
		}
		prog.start(c.label)
		summary, interrupted, err := c.run(ctx)
		if err != nil && ctx.Err() != nil {
			prog.fail(ctx.Err())
			r.interrupted = true
			break
		}
		if err != nil {
			prog.fail(err)
			r.elapsed = time.Since(start)
			return r, fmt.Errorf("cell %s: %w", strings.Join(strings.Fields(c.label), " "), err)
		}
		if interrupted {
			summary += " (interrupted)"
		} else {
			r.done++
		}
		prog.done(summary)
		if interrupted {
			r.interrupted = true
			break
		}
	}
	r.elapsed = time.Since(start)
	return r, nil
}

// report says on w, for the subcommand called name, how the run of cells
// ended: its length, or which part of it the output shows. measured is
// how many cells have a result in the output (an interrupted cell's
// partial result included).
func (r cellsRun) report(w io.Writer, name string, measured int) {
	total, unit := r.total, cellCount(r.done)
	if r.slices > 1 {
		total /= r.slices
		unit = fmt.Sprintf("%s in %d slices", cellCount(total), r.done)
	}
	if r.interrupted {
		fmt.Fprintf(w, "%s: interrupted; reporting the %d of %d cells measured\n", name, measured, total)
		return
	}
	fmt.Fprintf(w, "%s: %s in %v\n", name, unit, roundDuration(r.elapsed))
}

// err is the error the run ends with: nil, or that it was interrupted
// after measured of its cells.
func (r cellsRun) err(measured int) error {
	if r.interrupted {
		return fmt.Errorf("%w after %d of %d cells", errInterrupted, measured, r.total/max(r.slices, 1))
	}
	return nil
}

// end says on stderr, for the subcommand called name, the machine's load
// at the end of the run (against load0, the load at its start) and how
// the run ended (report), and returns that load.
func (r cellsRun) end(stderr io.Writer, name string, load0 probe.Load, measured int) *report.Load {
	load := report.NewLoad(probe.ReadLoad(), load0)
	fmt.Fprintln(stderr, output.Wrap(name+": at the end: "+load.String(), output.Width))
	r.report(stderr, name, measured)
	return load
}

// verdict is the error a run of the market's cells ends with: runErr (a
// cell failed), else errViolations when the audits found violations
// (their count, then detail), else err's.
func (r cellsRun) verdict(runErr error, violations int, detail string, measured int) error {
	switch {
	case runErr != nil:
		return runErr
	case violations > 0:
		return fmt.Errorf("%w: %d in all%s", errViolations, violations, detail)
	}
	return r.err(measured)
}

// progress reports a subcommand's cells on stderr: a live line on a
// terminal, one plain line per cell otherwise (its label when it starts,
// its figures when it ends, so a log shows which cell is running), and
// lines of the cell's own in between (note).
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	total, n int
	label    string
	first    time.Time // when the first cell started
	began    time.Time // when the running cell started
	// open says the plain label line of the running cell is printed and
	// not ended.
	open bool
	// prefillLast is when the last plain prefill line was printed.
	prefillLast time.Time
}

// newProgress returns the progress of cells on w; eachCell sets how many
// there are.
func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb" {
			p.terminal = true
		}
	}
	return p
}

// start starts the next cell, named by label.
func (p *progress) start(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	p.label = fmt.Sprintf("[%d/%d] %s", p.n, p.total, label)
	p.began, p.prefillLast = time.Now(), time.Time{}
	if p.first.IsZero() {
		p.first = p.began
	}
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s starting", p.label)
		return
	}
	fmt.Fprint(p.w, p.label+" ")
	p.open = true
}

// update shows a sim cell's live figures on a terminal; it is called from
// the cell's progress goroutine.
func (p *progress) update(c sim.Counters) {
	if !p.terminal {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K"+fit(fmt.Sprintf("%s %5.1fs  listed %s  bought %s  failed %s  retries %s",
		p.label, c.Elapsed.Seconds(), output.Thousands(c.Listed), output.Thousands(c.Bought),
		output.Thousands(c.Failed), output.Thousands(c.Retries)), output.Width))
}

// note prints a line of the running cell's own (a trial's outcome, say)
// between the progress lines.
func (p *progress) note(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteLocked(line)
}

func (p *progress) noteLocked(line string) {
	switch {
	case p.terminal:
		fmt.Fprint(p.w, "\r\033[K")
	case p.open:
		fmt.Fprintln(p.w) // end the label printed when the cell started
		p.open = false
	}
	fmt.Fprintln(p.w, line)
}

// noteEach notes each of lines, after prefix.
func (p *progress) noteEach(prefix string, lines []string) {
	for _, l := range lines {
		p.note(prefix + l)
	}
}

// notes is an io.Writer that prints each line written to it with note.
func (p *progress) notes() io.Writer { return &noteWriter{p: p} }

type noteWriter struct {
	p   *progress
	mu  sync.Mutex
	buf []byte
}

func (w *noteWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			return len(b), nil
		}
		w.p.note(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// end begins the line that ends the running cell, and returns the part
// of it that is on the line already: the label and a space.
func (p *progress) end() string {
	switch {
	case p.terminal:
		fmt.Fprint(p.w, "\r\033[K"+p.label+" ")
	case !p.open:
		fmt.Fprint(p.w, p.label+" ")
	}
	p.open = false
	return p.label + " "
}

// done ends the running cell with its figures, the time it took and,
// while cells remain, the time the rest should take.
func (p *progress) done(summary string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lead := p.end()
	tail := fmt.Sprintf("%.1fs", time.Since(p.began).Seconds())
	if left := eta(time.Since(p.first), p.n, p.total); left != "" {
		tail += ", " + left
	}
	tail = "  (" + tail + ")"
	line := lead + fit(summary, output.Width-len([]rune(lead))-len([]rune(tail))) + tail
	fmt.Fprintln(p.w, strings.TrimPrefix(line, lead))
}

// fit shortens a line of fields separated by two spaces to at most width
// columns, dropping whole fields from its end (the first is kept, cut if
// it must be).
func fit(line string, width int) string {
	for len([]rune(line)) > width {
		i := strings.LastIndex(line, "  ")
		if i <= 0 {
			r := []rune(line)
			return string(r[:max(width, 0)])
		}
		line = line[:i]
	}
	return line
}

// fail ends the running cell with its error.
func (p *progress) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lead := p.end()
	fmt.Fprintln(p.w, strings.TrimPrefix(output.Wrap(lead+"failed: "+err.Error(), output.Width), lead))
}

// rowSummary is the progress line's figures of a sim cell.
func rowSummary(r report.Row) string {
	audit := "audit ok"
	if r.Violations > 0 {
		audit = "AUDIT: " + output.Plural(r.Violations, "violation")
	}
	// The fields least needed go last: fit drops them on a narrow line.
	return fmt.Sprintf("bought %s (%s/s)  %s  retries %s  failed %s  listed %s",
		output.Thousands(r.Bought), output.Thousands(int64(math.Round(r.BoughtPerS))), audit,
		output.Thousands(r.Retries), output.Thousands(r.FailedPurchases), output.Thousands(r.Listed))
}

// cellCount is n cells, in words: "1 cell", "12 cells".
func cellCount(n int) string { return output.Plural(n, "cell") }
