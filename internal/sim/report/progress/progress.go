// Package progress runs a command's cells (a scenario under a strategy, a
// fault under a strategy, a recipe) one at a time and reports them on
// stderr as they go: a live line on a terminal, a plain line per cell
// otherwise, each with its figures, its time and the time the rest should
// take; then how the run ended.
package progress

import (
	"context"
	"errors"
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

// ErrInterrupted marks a run that its context's end stopped before its
// last cell, having kept what it measured until then.
var ErrInterrupted = errors.New("interrupted")

// ErrViolations marks a run whose audits found broken invariants.
var ErrViolations = errors.New("the audit found violations")

// Cell is one measurement of a subcommand (a scenario under a strategy, a
// fault under a strategy, a recipe): its label in the progress lines and
// in errors, and its run, which keeps its result and returns the figures
// of its progress line. A run that ctx's end cut short says so
// (interrupted); what it measured until then is kept.
type Cell struct {
	Label string
	Run   func(ctx context.Context) (summary string, interrupted bool, err error)
}

// Outcome is what Run did: how many cells of how many ran to their
// end, and whether ctx's end stopped the run.
type Outcome struct {
	Done, Total int
	Interrupted bool
	Elapsed     time.Duration
	// Slices, when more than 1, says each measurement is a cell's slice:
	// Total/Slices cells of Slices each.
	Slices int
}

// Run runs cells one at a time, each announced on prog and ended
// there with its figures, the time it took and the time the rest should
// take. It stops before a cell once ctx has ended, after a cell that was
// interrupted, and at the first cell that fails: that error, naming the
// cell, is returned (a failure caused by ctx's end counts as an
// interruption).
func Run(ctx context.Context, prog *Progress, cells []Cell) (Outcome, error) {
	r := Outcome{Total: len(cells)}
	prog.mu.Lock()
	prog.total = len(cells)
	prog.mu.Unlock()
	start := time.Now()
	for _, c := range cells {
		if ctx.Err() != nil {
			r.Interrupted = true
			break
		}
		prog.Start(c.Label)
		summary, interrupted, err := c.Run(ctx)
		if err != nil && ctx.Err() != nil {
			prog.Fail(ctx.Err())
			r.Interrupted = true
			break
		}
		if err != nil {
			prog.Fail(err)
			r.Elapsed = time.Since(start)
			return r, fmt.Errorf("cell %s: %w", strings.Join(strings.Fields(c.Label), " "), err)
		}
		if interrupted {
			summary += " (interrupted)"
		} else {
			r.Done++
		}
		prog.Done(summary)
		if interrupted {
			r.Interrupted = true
			break
		}
	}
	r.Elapsed = time.Since(start)
	return r, nil
}

// Report says on w, for the subcommand called name, how the run of cells
// ended: its length, or which part of it the output shows. measured is
// how many cells have a result in the output (an interrupted cell's
// partial result included).
func (r Outcome) Report(w io.Writer, name string, measured int) {
	total, unit := r.Total, Cells(r.Done)
	if r.Slices > 1 {
		total /= r.Slices
		unit = fmt.Sprintf("%s in %d slices", Cells(total), r.Done)
	}
	if r.Interrupted {
		fmt.Fprintf(w, "%s: interrupted; reporting the %d of %d cells measured\n", name, measured, total)
		return
	}
	fmt.Fprintf(w, "%s: %s in %v\n", name, unit, RoundDuration(r.Elapsed))
}

// Err is the error the run ends with: nil, or that it was interrupted
// after measured of its cells.
func (r Outcome) Err(measured int) error {
	if r.Interrupted {
		return fmt.Errorf("%w after %d of %d cells", ErrInterrupted, measured, r.Total/max(r.Slices, 1))
	}
	return nil
}

// End says on stderr, for the subcommand called name, the machine's load
// at the end of the run (against load0, the load at its start) and how
// the run ended (Report), and returns that load.
func (r Outcome) End(stderr io.Writer, name string, load0 probe.Load, measured int) *report.Load {
	load := report.NewLoad(probe.ReadLoad(), load0)
	fmt.Fprintln(stderr, output.Wrap(name+": at the end: "+load.String(), output.Width))
	r.Report(stderr, name, measured)
	return load
}

// Verdict is the error a run of the market's cells ends with: runErr (a
// cell failed), else ErrViolations when the audits found violations
// (their count, then detail), else err's.
func (r Outcome) Verdict(runErr error, violations int, detail string, measured int) error {
	switch {
	case runErr != nil:
		return runErr
	case violations > 0:
		return fmt.Errorf("%w: %d in all%s", ErrViolations, violations, detail)
	}
	return r.Err(measured)
}

// Progress reports a subcommand's cells on stderr: a live line on a
// terminal, one plain line per cell otherwise (its label when it starts,
// its figures when it ends, so a log shows which cell is running), and
// lines of the cell's own in between (note).
type Progress struct {
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

// New returns the progress of cells on w; Run sets how many
// there are.
func New(w io.Writer) *Progress {
	p := &Progress{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb" {
			p.terminal = true
		}
	}
	return p
}

// Start starts the next cell, named by label.
func (p *Progress) Start(label string) {
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

// Update shows a sim cell's live figures on a terminal; it is called from
// the cell's progress goroutine.
func (p *Progress) Update(c sim.Counters) {
	if !p.terminal {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K"+fit(fmt.Sprintf("%s %5.1fs  listed %s  bought %s  failed %s  retries %s",
		p.label, c.Elapsed.Seconds(), output.Thousands(c.Listed), output.Thousands(c.Bought),
		output.Thousands(c.Failed), output.Thousands(c.Retries)), output.Width))
}

// Note prints a line of the running cell's own (a trial's outcome, say)
// between the progress lines.
func (p *Progress) Note(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteLocked(line)
}

func (p *Progress) noteLocked(line string) {
	switch {
	case p.terminal:
		fmt.Fprint(p.w, "\r\033[K")
	case p.open:
		fmt.Fprintln(p.w) // end the label printed when the cell started
		p.open = false
	}
	fmt.Fprintln(p.w, line)
}

// NoteEach notes each of lines, after prefix.
func (p *Progress) NoteEach(prefix string, lines []string) {
	for _, l := range lines {
		p.Note(prefix + l)
	}
}

// Notes is an io.Writer that prints each line written to it with Note.
func (p *Progress) Notes() io.Writer { return &noteWriter{p: p} }

type noteWriter struct {
	p   *Progress
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
		w.p.Note(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// end begins the line that ends the running cell, and returns the part
// of it that is on the line already: the label and a space.
func (p *Progress) end() string {
	switch {
	case p.terminal:
		fmt.Fprint(p.w, "\r\033[K"+p.label+" ")
	case !p.open:
		fmt.Fprint(p.w, p.label+" ")
	}
	p.open = false
	return p.label + " "
}

// Done ends the running cell with its figures, the time it took and,
// while cells remain, the time the rest should take.
func (p *Progress) Done(summary string) {
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

// Fail ends the running cell with its error.
func (p *Progress) Fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lead := p.end()
	fmt.Fprintln(p.w, strings.TrimPrefix(output.Wrap(lead+"failed: "+err.Error(), output.Width), lead))
}

// RowSummary is the progress line's figures of a sim cell.
func RowSummary(r report.Row) string {
	audit := "audit ok"
	if r.Violations > 0 {
		audit = "AUDIT: " + output.Plural(r.Violations, "violation")
	}
	// The fields least needed go last: fit drops them on a narrow line.
	return fmt.Sprintf("bought %s (%s/s)  %s  retries %s  failed %s  listed %s",
		output.Thousands(r.Bought), output.Thousands(int64(math.Round(r.BoughtPerS))), audit,
		output.Thousands(r.Retries), output.Thousands(r.FailedPurchases), output.Thousands(r.Listed))
}

// Cells is n cells, in words: "1 cell", "12 cells".
func Cells(n int) string { return output.Plural(n, "cell") }

// eta says how long the rest of a job should take, at the mean pace of
// the part done: "about 1m20s left", or "" before anything is done.
func eta(elapsed time.Duration, done, total int) string {
	if done <= 0 || total <= done {
		return ""
	}
	left := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	return "about " + RoundDuration(left).String() + " left"
}

// RoundDuration rounds d for people: to the second from a minute up, to
// a tenth of a second below.
func RoundDuration(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// prefillEvery is the least time between two plain prefill lines.
const prefillEvery = 5 * time.Second

// Prefill reports the prefill of the running cell: on a terminal, a live
// line; otherwise a line at most every prefillEvery, and one at the end.
// It is called from the cell's own goroutine.
func (p *Progress) Prefill(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	elapsed := now.Sub(p.began)
	line := fmt.Sprintf("%s prefill %s of %s listings (%d%%), %v", p.label,
		output.Thousands(int64(done)), output.Thousands(int64(total)), 100*done/max(total, 1), RoundDuration(elapsed))
	if left := eta(elapsed, done, total); left != "" {
		line += ", " + left
	}
	if p.terminal {
		fmt.Fprint(p.w, "\r\033[K"+line)
		return
	}
	if done < total && now.Sub(p.prefillLast) < prefillEvery {
		return
	}
	p.prefillLast = now
	p.noteLocked(line)
}
