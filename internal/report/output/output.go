// Package output holds the conventions every output of the commands and
// the service follows: one environment block (Env) in every JSON document,
// text that fits a terminal of Width columns (Wrap, Widest), names from
// outside shown without their control characters (Printable,
// PrintableWriter), numbers with
// thousands separators (Thousands), and the program's version; and how a
// command reads its flags (Flags: one-line mistakes, exit status 2) and
// lists its subcommands (Program).
//
// JSON keys are snake_case. A duration is a number whose key ends in its
// unit, "_ms" or "_s" (latency.Milliseconds, latency.Seconds), never a Go
// duration string such as "1.5ms".
package output

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Width is the terminal width every default table and caption fits.
const Width = 100

// Env says where a document's figures were measured: the Redis server and
// the machine. Documents embed it, so its blocks are top-level keys.
type Env struct {
	Redis   Redis   `json:"redis"`
	Machine Machine `json:"machine"`
}

// Redis says which Redis a run used.
type Redis struct {
	// Mode is redis-server, miniredis, url or cluster.
	Mode string `json:"mode"`
	// Version is the server's redis_version ("miniredis" for the embedded
	// fallback).
	Version string `json:"version"`
}

// String is the block in words for a caption: the mode and the version
// ("redis-server 7.0.15"), or the mode alone where the version only
// repeats it ("miniredis").
func (r Redis) String() string {
	if r.Version == "" || r.Version == r.Mode {
		return r.Mode
	}
	return r.Mode + " " + r.Version
}

// Machine describes the computer and the program that ran. A field that
// is not known (a document written before it existed) is left out.
type Machine struct {
	CPUs      int    `json:"cpus,omitempty"`
	CPUModel  string `json:"cpu_model,omitempty"`
	OS        string `json:"os,omitempty"`
	Arch      string `json:"arch,omitempty"`
	GoVersion string `json:"go_version,omitempty"`
	// Program is the version of the program that wrote the document
	// (see Version).
	Program string `json:"program,omitempty"`
}

// NewEnv returns the environment block of a run on a Redis of the given
// mode and version, on this machine.
func NewEnv(mode, version string) Env {
	return Env{Redis: Redis{Mode: mode, Version: version}, Machine: ThisMachine()}
}

// ThisMachine describes the machine and the program running now.
func ThisMachine() Machine {
	return Machine{
		CPUs: runtime.NumCPU(), CPUModel: cpuModel(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		GoVersion: runtime.Version(), Program: Version(),
	}
}

// cpuModel reads the CPU model from /proc/cpuinfo, or "" where there is
// none.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Commit is the commit the program was built from, when the build set it
// (go build -ldflags "-X github.com/lockmarket/lockmarket/internal/report/output.Commit=$(git
// rev-parse --short=12 HEAD)"): it stands in for the VCS information that
// go build records, which a build with -buildvcs=false, or from a copy
// without its .git, lacks.
var Commit string

// Version is the program's version: the module version it was built at
// (a tag, or a pseudo-version when built from a work tree by "go build"),
// else "devel" followed by the VCS revision it was built from, if known,
// with "+dirty" when the tree had uncommitted changes.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return version(bi)
}

func version(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" && Commit != "" {
		return "devel " + Commit
	}
	if rev == "" {
		return "devel (built without VCS information)"
	}
	v := "devel " + rev[:min(len(rev), 12)]
	if dirty {
		v += "+dirty"
	}
	return v
}

// VersionLine is what -version prints for the program called name: its
// version, the Go release and the platform.
func VersionLine(name string) string {
	return name + " " + Version() + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}

// Wrap breaks text into lines of at most width columns at spaces, keeping
// the line breaks it already has. A word longer than width stands on a line
// of its own.
func Wrap(text string, width int) string {
	var b strings.Builder
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		n := 0
		for j, w := range strings.Fields(line) {
			l := len([]rune(w))
			if j > 0 && n+1+l > width {
				b.WriteByte('\n')
				n = 0
			} else if j > 0 {
				b.WriteByte(' ')
				n++
			}
			b.WriteString(w)
			n += l
		}
	}
	return b.String()
}

// Widest is the width of the widest line of text, in columns (one per
// rune: the box-drawing characters and "µ" of the tables are one column
// wide).
func Widest(text string) int {
	w := 0
	for line := range strings.Lines(text) {
		w = max(w, utf8.RuneCountInString(strings.TrimRight(line, "\r\n")))
	}
	return w
}

// Thousands formats n with commas between groups of three digits.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Plural is n and the noun, "1 round", "5 rounds": the noun takes an s
// unless n is 1.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Hanging wraps text to width columns after a first line that starts with
// lead; the lines after the first are indented by as many spaces as lead
// is wide, so that a list of names and descriptions keeps its column.
func Hanging(lead, text string, width int) string {
	pad := strings.Repeat(" ", len([]rune(lead)))
	lines := strings.Split(Wrap(text, width-len(pad)), "\n")
	return lead + strings.Join(lines, "\n"+pad)
}

// Printable is s as a terminal may show it: every control or otherwise
// unprintable character (an escape sequence's ESC, a carriage return, a
// newline, a right-to-left override, a byte that is not UTF-8) written as
// Go escapes it ("\x1b", "\r", "\n", "\u202e"), and everything past max
// runes (when max is positive) cut and said with "…(N bytes)". A name
// read from a file or a server can so neither move the cursor nor pass
// for the program's own lines.
func Printable(s string, max int) string {
	var b strings.Builder
	n := 0
	for i, r := range s {
		if max > 0 && n == max {
			fmt.Fprintf(&b, "…(%d bytes)", len(s))
			return b.String()
		}
		n++
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' || unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// PrintableWriter writes to w what it is given with Printable's escapes
// of every control or unprintable character but the newline and the
// tab, and no cut: a name from a file or a server, printed anywhere in a
// command's output, can neither move the cursor nor pass for the
// program's own lines. A character split across two writes is escaped
// whole, once its end arrives.
func PrintableWriter(w io.Writer) io.Writer { return &printableWriter{w: w} }

type printableWriter struct {
	w       io.Writer
	pending []byte // the start of a character whose end is still to come
}

func (p *printableWriter) Write(b []byte) (int, error) {
	buf := append(p.pending, b...)
	p.pending = nil
	var out strings.Builder
	for len(buf) > 0 {
		r, size := utf8.DecodeRune(buf)
		if r == utf8.RuneError && size <= 1 && !utf8.FullRune(buf) {
			p.pending = append([]byte(nil), buf...)
			break
		}
		if r == '\n' || r == '\t' {
			out.WriteRune(r)
		} else {
			out.WriteString(Printable(string(buf[:size]), 0))
		}
		buf = buf[size:]
	}
	if _, err := io.WriteString(p.w, out.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}
