package view

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/report/output"
)

// WriteSummary writes, for a person, what was explored and within which
// bounds, the properties checked, and how far the search went: the
// first lines of the report "simulate explore" prints, each wrapped to
// 100 columns. WriteFindings writes the rest.
func WriteSummary(w io.Writer, r *result.Result) error {
	var b bytes.Buffer
	writeModel(&b, r)
	writeSearch(&b, r)
	_, err := w.Write(b.Bytes())
	return err
}

// WriteFindings writes, for a person, the properties broken and the
// unsteady findings, then the counterexample to show first
// (Counterexample) as its timeline, and the note on how time is kept.
// The counterexample's steps are written too when verbose is set, or
// when its replay left no timeline.
func WriteFindings(w io.Writer, r *result.Result, verbose bool) error {
	var b bytes.Buffer
	writeFindings(&b, r)
	if c := r.Counterexample(); c != nil {
		if err := writeFound(&b, c, verbose); err != nil {
			return err
		}
	}
	fmt.Fprintf(&b, "\n%s\n", output.Wrap(r.Note(), output.Width))
	_, err := w.Write(b.Bytes())
	return err
}

// writeLine writes s wrapped to the report's width.
func writeLine(b *bytes.Buffer, s string) { fmt.Fprintf(b, "%s\n", output.Wrap(s, output.Width)) }

// writeModel writes what was explored and within which bounds.
func writeModel(b *bytes.Buffer, r *result.Result) {
	writeLine(b, fmt.Sprintf("explore: %s — %s", r.Target, r.About))
	m := r.Model
	faults := "no faults"
	if m.Faults > 0 && len(m.FaultKinds) > 0 {
		faults = fmt.Sprintf(
			"at most %d fault(s) per schedule of %s", m.Faults, action.JoinFaults(m.FaultKinds, ", "),
		)
	}
	nodes := ""
	switch n := r.NodeCount; {
	case n == 1:
		nodes = " on 1 node"
	case n > 1:
		nodes = fmt.Sprintf(" on %d nodes", n)
	}
	if slices.Contains(m.FaultKinds, action.FaultClockJump) {
		faults += fmt.Sprintf(" (a clock jumps %v)", m.Jump)
	}
	writeLine(
		b,
		fmt.Sprintf(
			"model: %d clients%s, %d critical section(s) each, %d attempt(s) at the lock per "+
				"section, at most %d commands per client, %s, at most %d advance(s) of the "+
				"clock; %s, retry %v, pauses short %v / long %v / forever (virtual time)",
			m.Clients, nodes, m.Iterations, m.Attempts, m.Steps, faults, m.Ticks, leaseText(m),
			m.Retry, m.TTL/2, m.TTL*3/2,
		),
	)
	writeLine(b, "checked: "+strings.Join(r.Checked, ", "))
}

// leaseText says the model's leases, their renewal and the network's
// delay.
func leaseText(m action.Model) string {
	lease := fmt.Sprintf("lease %v", m.TTL)
	if len(m.TTLs) > 0 {
		var ls []string
		for i := range m.Clients {
			ls = append(ls, fmt.Sprintf("%c %v", 'A'+i, m.TTLs[min(i, len(m.TTLs)-1)]))
		}
		lease = "leases " + strings.Join(ls, ", ")
	}
	if m.RenewEvery > 0 {
		lease += fmt.Sprintf(", renewed every %v", m.RenewEvery)
	}
	if m.MaxDelay > 0 {
		lease += fmt.Sprintf(", commands land within %v", m.MaxDelay)
	}
	return lease
}

// writeSearch writes how far the search went, and why it stopped when it
// was cut short.
func writeSearch(b *bytes.Buffer, r *result.Result) {
	cover := "yes, within the bounds"
	if !r.Exhaustive {
		cover = "no"
		switch {
		case r.Stopped != "":
			cover = "no (cut short: " + r.Stopped + ")"
		case r.Diverged > 0:
			cover = "no (replays diverged)"
		case r.Mode == string(sched.Exhaustive):
			cover = "no (stopped early)"
		}
	}
	writeLine(
		b,
		fmt.Sprintf(
			"search: %s mode, %s (%d more cut by the reduction), %.1f s, %.0f schedules/s; "+
				"coverage %s of the tree; every schedule searched: %s",
			r.Mode, output.Plural(r.Schedules, "schedule"), r.Pruned, r.Elapsed.Seconds(),
			r.SchedulesPerSecond(), coverText(r.Coverage), cover,
		),
	)
	writeShard(b, r)
	switch r.Stopped {
	case result.StoppedBudget:
		writeLine(
			b,
			fmt.Sprintf(
				"The search was cut short: its budget of %v ran out. What it found so far "+
					"follows; the schedules it did not run may break more.",
				r.Budget,
			),
		)
	case result.StoppedInterrupted:
		writeLine(
			b,
			"The search was cut short: it was interrupted. What it found so far follows; the "+
				"schedules it did not run may break more.",
		)
	}
	writeLine(b, r.ActivityText())
	if r.Diverged > 0 {
		writeLine(
			b,
			fmt.Sprintf(
				"%s did not follow its prefix (the code did something the scheduler does not "+
					"order): the search is not a proof",
				output.Plural(r.Diverged, "replay"),
			),
		)
	}
	if r.Reruns > 0 {
		writeLine(
			b,
			fmt.Sprintf(
				"%s run again: the machine stalled longer than a lease's margin (the lease ran "+
					"out on the server's real time)",
				output.Plural(r.Reruns, "run"),
			),
		)
	}
}

// writeShard says, for a shard of a search, which part it searched, and
// for a merged result, of how many shards.
func writeShard(b *bytes.Buffer, r *result.Result) {
	if s := r.Shard; s != nil {
		writeLine(b, fmt.Sprintf("shard %d/%d: its part is the subtrees k of the %d found %d "+
			"decisions down, and the runs k of the %d that ended above, with k mod %d = %d; "+
			"the counts, the coverage (of the whole tree) and \"every schedule searched\" are "+
			"this part's; simulate explore -merge combines the %d shards' JSON results",
			s.Index, s.Count, s.Subtrees, s.Depth, s.Runs, s.Count, s.Index, s.Count))
	}
	switch {
	case r.MergedShards > 0 && r.WholeCount:
		writeLine(b, fmt.Sprintf("merged: the results of %d shards of one search; the "+
			"counts are the whole search's, recounted over what the shards explored (they "+
			"ran %d schedules, +%d cut, a state two shards reached being searched by both); "+
			"time: the longest shard's", r.MergedShards, r.ShardSchedules, r.ShardPruned))
	case r.MergedShards > 0:
		writeLine(b, fmt.Sprintf("merged: the results of %d shards of one search, their "+
			"schedules summed (a state two shards reached was searched by both: the whole "+
			"search's count is recounted only from shards run exhaustively with -workers 1 "+
			"and the state cache); time: the longest shard's", r.MergedShards))
	}
}

// coverText writes a fraction of the tree as a percentage that says 100%
// only when it is all of it, and more than 0% when it is any of it.
func coverText(f float64) string {
	switch p := f * 100; {
	case f >= 1:
		return "100%"
	case p >= 99.9:
		return ">99.9%"
	case f > 0 && p < 0.1:
		return "<0.1%"
	default:
		return fmt.Sprintf("%.1f%%", p)
	}
}

// writeFindings writes the violations and the unsteady findings.
func writeFindings(b *bytes.Buffer, r *result.Result) {
	vacuous := r.Vacuous()
	switch {
	case vacuous != nil:
		b.WriteString("\n")
		writeLine(
			b,
			fmt.Sprintf(
				"No verdict: %s.",
				strings.TrimPrefix(vacuous.Error(), result.ErrVacuous.Error()+": "),
			),
		)
	case len(r.Violations) == 0 && r.Stopped != "":
		b.WriteString("\n")
		writeLine(
			b,
			fmt.Sprintf(
				"No violation of %s found before the search was cut short.",
				strings.Join(r.Checked, ", "),
			),
		)
	case len(r.Violations) == 0:
		b.WriteString("\n")
		writeLine(b, fmt.Sprintf("No violation of %s.", strings.Join(r.Checked, ", ")))
	default:
		fmt.Fprintln(b, "\nviolations:")
		for _, v := range r.Violations {
			writeLine(
				b,
				fmt.Sprintf(
					"  %s: %s (%s)", v.Property, v.Message, output.Plural(len(v.Steps), "step"),
				),
			)
		}
	}
	if len(r.Unsteady) == 0 {
		return
	}
	fmt.Fprintln(b)
	writeLine(
		b,
		"unsteady (found by the search, but not broken again when its schedule was replayed on a "+
			"fresh server, twice; not counted as a violation):",
	)
	for _, u := range r.Unsteady {
		writeLine(
			b,
			fmt.Sprintf(
				"  %s: %s (%s; %s)", u.Property, u.Message, output.Plural(len(u.Steps), "step"),
				u.ReplayNote,
			),
		)
		var acts []string
		for _, a := range u.Actions {
			acts = append(acts, a.String())
		}
		writeLine(b, "  schedule: "+strings.Join(acts, "; "))
	}
}

// writeText writes the counterexample step by step (verbose, or when its
// replay left no timeline) and as a timeline.
func writeFound(b *bytes.Buffer, f *result.Counterexample, verbose bool) error {
	repro := "reproduced on redis-server " + f.Server
	if f.Server == "" {
		repro = "reproduced: " + f.ReplayNote
	}
	switch {
	case f.NotReplayed:
		repro = f.ReplayNote
	case !f.Reproduced:
		repro = "NOT reproduced on a fresh redis-server: " + f.ReplayNote
	}
	b.WriteString("\n")
	writeLine(
		b,
		fmt.Sprintf(
			"counterexample (%s, %s; %s):", f.Property, output.Plural(len(f.Steps), "step"), repro,
		),
	)
	if verbose || f.Replay.Events == nil {
		for i, s := range f.Steps {
			mark := ""
			if s.Violation != "" {
				mark = "  !! " + s.Violation
			}
			text := s.Text
			if s.Action.Kind == action.Run {
				text = s.Action.Client + ": " + text
			}
			fmt.Fprintf(b, "%3d  %-9s %s%s\n", i+1, action.FormatMS(s.ClockMS), text, mark)
		}
	}
	if f.Replay.Events == nil {
		return nil
	}
	fmt.Fprintln(b)
	return f.Replay.Text(b, output.Width, false)
}
