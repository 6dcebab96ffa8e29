package timeline

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Markers in the first column of Text.
const (
	// MarkViolation marks a step that broke what the lock is for.
	MarkViolation = "!!"
	// MarkRefused marks a commit Redis refused.
	MarkRefused = "xx"
)

// Step is one row of a step-by-step reading: an event, or a command with
// its reply, or the same event repeated.
type Step struct {
	Event
	// Text is what the step shows: a command is followed by its reply.
	Text string
	// Times is how many identical steps in a row this one stands for.
	Times int
}

// Steps reads t step by step: without verbose, the commands and replies
// of anything but a lock are left out. A command whose reply follows with
// no other client acting in between becomes one step ("GET k → (nil)"),
// and identical steps in a row become one with Times counting them.
func (t Timeline) Steps(verbose bool) []Step {
	var shown []Event
	for _, e := range t.Events {
		if verbose || !e.Verbose {
			shown = append(shown, e)
		}
	}
	// A command whose reply comes before any other client acts is shown
	// with its reply, where the reply is.
	merged := map[int]Event{} // command by the Seq of its reply
	for i, e := range shown {
		if e.Kind != Command {
			continue
		}
		for _, r := range shown[i+1:] {
			if r.Client != e.Client {
				break
			}
			if r.Kind == Reply && r.Ref == e.Seq {
				merged[r.Seq] = e
				break
			}
		}
	}
	held := map[int]bool{}
	for _, c := range merged {
		held[c.Seq] = true
	}
	var out []Step
	for _, e := range shown {
		if held[e.Seq] {
			continue
		}
		text := e.Detail
		if c, ok := merged[e.Seq]; ok {
			text = c.Detail + " → " + e.Detail
		} else if e.Kind == Reply {
			text = "→ " + e.Detail
		}
		if j := repeatOf(out, e, text); j >= 0 {
			out[j].Times++
			continue
		}
		out = append(out, Step{Event: e, Text: text, Times: 1})
	}
	return out
}

// repeatOf returns the index in out of the step that e repeats: the same
// client's last step, with the same kind and text, when nothing but
// other clients' retries and renewals came after it; -1 if none.
func repeatOf(out []Step, e Event, text string) int {
	for j := len(out) - 1; j >= 0; j-- {
		s := out[j]
		if s.Client == e.Client {
			if s.Kind == e.Kind && s.Text == text {
				return j
			}
			return -1
		}
		if s.Kind != AcquireFailed && s.Kind != LeaseStart {
			return -1
		}
	}
	return -1
}

// Text writes t as columns, one per client, time going down, at most
// width characters wide (100 if width < 40). Steps that broke mutual
// exclusion are marked MarkViolation with the reason below them; refused
// commits MarkRefused. A lane shows │ while its client holds a lock and ┆
// while it is paused. Findings and the verdict follow the lanes.
func (t Timeline) Text(w io.Writer, width int, verbose bool) error {
	if width < 40 {
		width = 100
	}
	var b strings.Builder
	title := t.Title
	if t.Variant != "" {
		title += " (" + t.Variant + ")"
	}
	b.WriteString(title + "\n")
	const timeW, markW = 9, 3
	n := max(len(t.Clients), 1)
	laneW := (width - timeW - markW) / n
	lane := map[string]int{}
	for i, c := range t.Clients {
		lane[c] = i
	}
	row := func(mark, at string, cells []string) {
		line := fmt.Sprintf("%-*s%*s ", markW-1, mark, timeW-1, at)
		for i, c := range cells {
			if i == len(cells)-1 {
				line += strings.TrimRight(c, " ")
			} else {
				line += pad(c, laneW)
			}
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	head := make([]string, n)
	rule := make([]string, n)
	for i, c := range t.Clients {
		head[i] = clip(c, laneW-2)
		rule[i] = strings.Repeat("─", laneW-2)
	}
	row("", "ms", head)
	row("", "", rule)

	holding := map[string]int{}
	paused := map[string]bool{}
	idle := func() []string {
		cells := make([]string, n)
		for i, c := range t.Clients {
			switch {
			case paused[c]:
				cells[i] = "┆"
			case holding[c] > 0:
				cells[i] = "│"
			}
		}
		return cells
	}
	var findings []Step
	for _, s := range t.Steps(verbose) {
		if s.Client == Checker || s.Client == "" {
			if s.Kind == Finding {
				findings = append(findings, s)
			}
			continue
		}
		i, ok := lane[s.Client]
		if !ok {
			continue
		}
		mark, text := stepLabel(s)
		switch s.Kind {
		case PauseStart:
			paused[s.Client] = true
		case PauseEnd:
			paused[s.Client] = false
		}
		lines := wrap(text, laneW-2)
		if s.Violation != "" {
			lines = append(lines, wrap("^ "+s.Violation, laneW-2)...)
		}
		for j, l := range lines {
			cells := idle()
			cells[i] = l
			if j == 0 {
				row(mark, fmt.Sprintf("%.1f", float64(s.At)/float64(time.Millisecond)), cells)
			} else {
				row("", "", cells)
			}
		}
		switch s.Kind {
		case Acquire:
			holding[s.Client]++
		case Release, LeaseExpired:
			holding[s.Client] = max(holding[s.Client]-1, 0)
		}
	}
	writeTrailer(&b, findings, t.Verdict, width, markW)
	_, err := io.WriteString(w, b.String())
	return err
}

// stepLabel is what a lane shows of s, and the mark of its row.
func stepLabel(s Step) (mark, text string) {
	text = s.Text
	if s.Times > 1 {
		text += fmt.Sprintf(" (×%d)", s.Times)
	}
	switch {
	case s.Violation != "":
		mark = MarkViolation
	case s.Kind == CommitRefused:
		mark = MarkRefused
	}
	return mark, text
}

// writeTrailer writes what follows the lanes: the checker's findings, each
// marked when it is a violation, then the verdict.
func writeTrailer(b *strings.Builder, findings []Step, verdict string, width, markW int) {
	if len(findings) > 0 {
		b.WriteString("\n")
		for _, f := range findings {
			mark := "  "
			if f.Violation != "" {
				mark = MarkViolation
			}
			for j, l := range wrap("checker: "+f.Text, width-markW) {
				if j > 0 {
					mark = "  "
				}
				fmt.Fprintf(b, "%-*s%s\n", markW, mark, l)
			}
		}
	}
	if verdict != "" {
		b.WriteString("\n")
		for _, l := range wrap(verdict, width) {
			b.WriteString(l + "\n")
		}
	}
}

// pad fills s with spaces to n characters.
func pad(s string, n int) string {
	if k := len([]rune(s)); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

// wrap cuts text into lines of at most n characters, at spaces where it
// can.
func wrap(text string, n int) []string {
	if n < 4 {
		n = 4
	}
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		line := []rune{}
		for _, word := range strings.Fields(para) {
			wr := []rune(word)
			for len(wr) > n {
				if len(line) > 0 {
					lines = append(lines, string(line))
					line = line[:0]
				}
				lines = append(lines, string(wr[:n]))
				wr = wr[n:]
			}
			switch {
			case len(line) == 0:
				line = append(line, wr...)
			case len(line)+1+len(wr) <= n:
				line = append(append(line, ' '), wr...)
			default:
				lines = append(lines, string(line))
				line = append([]rune{}, wr...)
			}
		}
		if len(line) > 0 {
			lines = append(lines, string(line))
		}
	}
	if len(lines) == 0 {
		lines = []string{""}
	}
	return lines
}
