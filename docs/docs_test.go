// Package docs_test keeps the README, the changelog and the guides in this
// folder true: every relative link resolves (to a file, and to a heading
// when it names one), every simulate and market command in a code block
// names a real subcommand and real flags, and the tables the code can
// produce (flags, round trips, error codes, metrics) match it.
package docs_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/bookform"
	"github.com/lockmarket/lockmarket/internal/service/httpapi"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/internal/testsupport/roundtrip"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestMain reports the tests skipped for want of a real server.
func TestMain(m *testing.M) { redistest.Main(m) }

// root is the module root, the parent of this folder.
const root = ".."

// pages are the markdown files checked, relative to root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}
	return append(out, docs...)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeLength keeps the README a front page.
func TestReadmeLength(t *testing.T) {
	if n := strings.Count(read(t, filepath.Join(root, "README.md")), "\n"); n > 300 {
		t.Errorf("README.md has %d lines; at most 300 (move reference into docs/)", n)
	}
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
)

// withoutCode returns text with its fenced code blocks blanked, so that
// neither links nor headings are read from code.
func withoutCode(text string) string {
	var b strings.Builder
	in := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "```") {
			in = !in
			b.WriteString("\n")
			continue
		}
		if in {
			b.WriteString("\n")
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// anchors returns the anchors GitHub gives the headings of a markdown
// text: lower case, punctuation dropped, spaces to hyphens, repeats
// numbered.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(withoutCode(text), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && isLetter(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func isLetter(r rune) bool { return strings.ToLower(string(r)) != strings.ToUpper(string(r)) }

// TestLinks checks every relative link of every page: the file or folder
// exists, and a #fragment names a heading of the markdown file it points
// to.
func TestLinks(t *testing.T) {
	for _, page := range pages(t) {
		text := read(t, page)
		for _, m := range linkRE.FindAllStringSubmatch(withoutCode(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %q: %v", page, target, err)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			if !anchors(read(t, file))[frag] {
				t.Errorf("%s: link %q: no heading with anchor #%s in %s", page, target, frag, file)
			}
		}
	}
}

// command is one invocation of simulate or market found in a code block.
type command struct {
	page, line string
	prog       string   // "simulate" or "market"
	args       []string // what follows the program
}

// commands returns the invocations of simulate and market in the code
// blocks of every page: "go run ./cmd/NAME ARGS" or "PATH/NAME ARGS".
func commands(t *testing.T) []command {
	t.Helper()
	var out []command
	for _, page := range pages(t) {
		in := false
		var lang string
		var cont string
		for line := range strings.Lines(read(t, page)) {
			line = strings.TrimRight(line, "\n")
			if strings.HasPrefix(line, "```") {
				in, lang = !in, strings.TrimPrefix(line, "```")
				continue
			}
			if !in || (lang != "" && lang != "sh" && lang != "bash") {
				continue
			}
			if strings.HasSuffix(line, "\\") {
				cont += strings.TrimSuffix(line, "\\") + " "
				continue
			}
			line, cont = cont+line, ""
			words := shellWords(line)
			for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
				words = words[1:] // VAR=value
			}
			var prog string
			var args []string
			switch {
			case len(words) >= 3 && words[0] == "go" && words[1] == "run" &&
				(words[2] == "./cmd/simulate" || words[2] == "./cmd/market"):
				prog, args = strings.TrimPrefix(words[2], "./cmd/"), words[3:]
			case len(words) >= 1 && (filepath.Base(words[0]) == "simulate" || filepath.Base(words[0]) == "market") &&
				strings.Contains(words[0], "/"):
				prog, args = filepath.Base(words[0]), words[1:]
			default:
				continue
			}
			out = append(out, command{page: page, line: line, prog: prog, args: args})
		}
	}
	return out
}

// shellWords splits a line of shell into words: quotes group, a # that
// starts a word begins a comment, and the words stop at a pipe, a
// redirection, ; or &&.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	flush := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '#' && !inWord:
			flush()
			return stopAt(words)
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return stopAt(words)
}

func stopAt(words []string) []string {
	for i, w := range words {
		if w == "|" || w == "||" || w == "&&" || w == ";" || w == "&" ||
			strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "<") {
			return words[:i]
		}
	}
	return words
}

// build builds simulate and market into dir. It goes through go run,
// whose -exec runs "cp BINARY dir/NAME" instead of the program: go run
// keeps the executables it links in the build cache, so that once the
// programs are built, later runs of this test link nothing.
func build(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"simulate", "market"} {
		cmd := exec.Command("go", "run", "-exec", "cp", "./cmd/"+name, filepath.Join(dir, name))
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go run -exec cp ./cmd/%s: %v\n%s", name, err, out)
		}
	}
}

// help runs the program built in dir with args and returns what it
// printed; the flag package prints -h on stderr.
func help(t *testing.T, dir, prog string, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(dir, prog), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", prog, args, err, out)
	}
	return string(out)
}

var (
	flagLineRE = regexp.MustCompile(`(?m)^  -([A-Za-z0-9][A-Za-z0-9_-]*)`)
	subLineRE  = regexp.MustCompile(`(?m)^  ([a-z][a-z-]*) +\S`)
	defaultRE  = regexp.MustCompile(`\(default (.*)\)\s*$`)
)

// flagDoc is one flag as -h prints it.
type flagDoc struct {
	name, def string
}

// flagsOf parses the flags and their defaults out of -h output.
func flagsOf(usage string) map[string]flagDoc {
	out := map[string]flagDoc{}
	locs := flagLineRE.FindAllStringSubmatchIndex(usage, -1)
	for i, loc := range locs {
		name := usage[loc[2]:loc[3]]
		end := len(usage)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		block := strings.TrimSpace(usage[loc[1]:end])
		f := flagDoc{name: name}
		if m := defaultRE.FindStringSubmatch(block); m != nil {
			f.def = strings.Trim(m[1], `"`)
		}
		out[name] = f
	}
	return out
}

// cli is what the programs accept: simulate's subcommands and each one's
// flags, and market's flags.
type cli struct {
	subcommands []string
	flags       map[string]map[string]flagDoc // "simulate run", ..., "market"
}

// readCLI builds the programs and reads their help.
func readCLI(t *testing.T) cli {
	t.Helper()
	dir := t.TempDir()
	build(t, dir)
	c := cli{flags: map[string]map[string]flagDoc{}}
	overview := help(t, dir, "simulate", "-h")
	_, subs, _ := strings.Cut(overview, "Subcommands:")
	subs, _, _ = strings.Cut(subs, "\nFlags:")
	for _, m := range subLineRE.FindAllStringSubmatch(subs, -1) {
		c.subcommands = append(c.subcommands, m[1])
		if m[1] == "help" || m[1] == "version" {
			continue
		}
		c.flags["simulate "+m[1]] = flagsOf(help(t, dir, "simulate", "help", m[1]))
	}
	c.flags["simulate"] = map[string]flagDoc{"h": {name: "h"}, "help": {name: "help"}, "version": {name: "version"}}
	c.flags["market"] = flagsOf(help(t, dir, "market", "-h"))
	if len(c.subcommands) == 0 || len(c.flags["market"]) == 0 {
		t.Fatal("could not read the programs' help")
	}
	return c
}

// TestCLI builds simulate and market once and checks the pages against
// their help: the commands in code blocks, and the flags tables.
func TestCLI(t *testing.T) {
	c := readCLI(t)
	t.Run("commands", func(t *testing.T) { checkCommands(t, c) })
	t.Run("flag tables", func(t *testing.T) { checkFlagTables(t, c) })
}

// checkCommands checks every simulate and market command in the pages'
// code blocks against the programs' own help: the subcommand exists and
// every flag is one of its flags.
func checkCommands(t *testing.T, c cli) {
	cmds := commands(t)
	if len(cmds) < 10 {
		t.Fatalf("found %d commands in the pages; the parser lost them", len(cmds))
	}
	for _, cmd := range cmds {
		where := fmt.Sprintf("%s: %q", cmd.page, cmd.line)
		set := "market"
		args := cmd.args
		if cmd.prog == "simulate" {
			set = "simulate run"
			if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				sub := args[0]
				if !slices.Contains(c.subcommands, sub) {
					t.Errorf("%s: no subcommand %q (simulate has %s)", where, sub, strings.Join(c.subcommands, ", "))
					continue
				}
				args = args[1:]
				switch sub {
				case "help":
					if len(args) > 0 && c.flags["simulate "+args[0]] == nil {
						t.Errorf("%s: no subcommand %q to help with", where, args[0])
					}
					continue
				case "version":
					if len(args) > 0 {
						t.Errorf("%s: version takes no arguments", where)
					}
					continue
				}
				set = "simulate " + sub
			} else if len(args) > 0 && c.flags["simulate"][strings.TrimLeft(args[0], "-")].name != "" {
				continue // -h, -version
			}
		}
		for _, a := range args {
			if !strings.HasPrefix(a, "-") || a == "-" {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if name == "h" || name == "help" {
				continue
			}
			if _, ok := c.flags[set][name]; !ok {
				t.Errorf("%s: %s has no flag -%s", where, set, name)
			}
		}
	}
}

// markedTables returns the tables that follow a "<!-- table: KIND -->"
// comment in the pages, by KIND: each table as rows of cells (header and
// rule left out).
func markedTables(t *testing.T) map[string][][][]string {
	t.Helper()
	out := map[string][][][]string{}
	markRE := regexp.MustCompile(`^<!-- table: (.+?) -->$`)
	for _, page := range pages(t) {
		sc := bufio.NewScanner(strings.NewReader(read(t, page)))
		kind := ""
		var rows [][]string
		for sc.Scan() {
			line := sc.Text()
			if m := markRE.FindStringSubmatch(line); m != nil {
				kind, rows = m[1], nil
				continue
			}
			if kind == "" {
				continue
			}
			if strings.HasPrefix(line, "|") {
				rows = append(rows, splitRow(line))
				continue
			}
			if len(rows) > 0 {
				out[kind] = append(out[kind], rows[min(2, len(rows)):])
				kind, rows = "", nil
			}
		}
		if kind != "" && len(rows) > 0 {
			out[kind] = append(out[kind], rows[min(2, len(rows)):])
		}
	}
	return out
}

// sameDuration says whether a and b are both durations, and equal
// ("24h" and "24h0m0s").
func sameDuration(a, b string) bool {
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	return errA == nil && errB == nil && da == db
}

func splitRow(line string) []string {
	cells := strings.Split(strings.Trim(line, "|"), "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(c)
	}
	return cells
}

var backtickedFlagRE = regexp.MustCompile("`-([a-z0-9][a-z0-9-]*)")

// checkFlagTables checks each flags table ("<!-- table: flags PROGRAM
// [SUBCOMMAND] -->") against the program's help: every flag in a table
// exists, with the default the help prints, and the tables of a program
// together list all of its flags.
func checkFlagTables(t *testing.T, c cli) {
	tables := markedTables(t)
	listed := map[string]map[string]bool{}
	n := 0
	for kind, ts := range tables {
		set, ok := strings.CutPrefix(kind, "flags ")
		if !ok {
			continue
		}
		flags := c.flags[set]
		if flags == nil {
			t.Errorf("table %q: no such program", kind)
			continue
		}
		if listed[set] == nil {
			listed[set] = map[string]bool{}
		}
		for _, rows := range ts {
			n++
			for _, row := range rows {
				m := backtickedFlagRE.FindStringSubmatch(row[0])
				if m == nil {
					t.Errorf("table %q: row %q names no flag", kind, row)
					continue
				}
				f, ok := flags[m[1]]
				if !ok {
					t.Errorf("table %q: %s has no flag -%s", kind, set, m[1])
					continue
				}
				listed[set][m[1]] = true
				if len(row) < 2 {
					continue
				}
				def := strings.Trim(row[1], "`")
				switch {
				case f.def == "" && (def == "" || def == "off" || def == "0"):
				case sameDuration(def, f.def):
				case def != f.def:
					t.Errorf("table %q: -%s default %q, the program's is %q", kind, m[1], def, f.def)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no flags tables found")
	}
	for set, names := range listed {
		for name := range c.flags[set] {
			if name != "h" && !names[name] {
				t.Errorf("%s: flag -%s is in no flags table", set, name)
			}
		}
	}
}

// TestRoundTripTable measures the round trips and commands of one
// uncontended List and Purchase under every client form and strategy, on
// miniredis, and checks them against the table marked "round trips".
func TestRoundTripTable(t *testing.T) {
	tables := markedTables(t)["round trips"]
	if len(tables) != 1 {
		t.Fatalf("%d tables marked round trips, want 1", len(tables))
	}
	want := map[string][]string{}
	for _, row := range tables[0] {
		if len(row) != 6 {
			t.Fatalf("round trips row %q: want 6 cells", row)
		}
		want[row[0]+"/"+strings.Trim(row[1], "`")] = row[2:]
	}
	b := redistest.Mini(t)
	ctx := context.Background()
	for _, f := range markettrace.ClientForms {
		for _, s := range market.Strategies {
			key := string(f) + "/" + string(s)
			w, ok := want[key]
			if !ok {
				t.Errorf("round trips table has no row for %s", key)
				continue
			}
			delete(want, key)
			// A plain client: the miniredis WATCH hook of b.NewClient
			// sends commands of its own.
			c := redis.NewClient(&redis.Options{Addr: b.Addr()})
			t.Cleanup(func() { c.Close() })
			counter := &roundtrip.Counter{}
			c.AddHook(counter)
			m, err := market.New(c, "docs"+string(f)+string(s), bookform.Options(c, f)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range []struct {
				id    string
				funds int64
			}{{"buyer", 1000}, {"seller", 0}} {
				if _, err := m.CreateUser(ctx, u.id, u.id, u.funds); err != nil {
					t.Fatal(err)
				}
			}
			// Once first, so that every script is cached on the server.
			for _, item := range []string{"warm", "item"} {
				if err := m.GrantItem(ctx, "seller", item); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := m.List(ctx, s, "seller", "warm", 1); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Purchase(ctx, s, "buyer", "seller", "warm", 1); err != nil {
				t.Fatal(err)
			}
			before := counter.Load()
			if _, err := m.List(ctx, s, "seller", "item", 5); err != nil {
				t.Fatal(err)
			}
			list := counter.Load().Sub(before)
			before = counter.Load()
			if _, err := m.Purchase(ctx, s, "buyer", "seller", "item", 5); err != nil {
				t.Fatal(err)
			}
			buy := counter.Load().Sub(before)
			got := []string{itoa(list.RoundTrips), itoa(list.Commands), itoa(buy.RoundTrips), itoa(buy.Commands)}
			if !slices.Equal(got, w) {
				t.Errorf("%s: list and purchase cost %v (round trips, commands, round trips, commands); the table says %v",
					key, got, w)
			}
		}
	}
	for key := range want {
		t.Errorf("round trips table has a row for %s, which does not exist", key)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// apiCodes returns the error codes the service defines: the string
// constants named Code... of the package that serves the API.
func apiCodes(t *testing.T) map[string]bool {
	t.Helper()
	codes := map[string]bool{}
	constRE := regexp.MustCompile(`(?m)^\s*Code[A-Za-z]+\s*=\s*"([a-z_]+)"`)
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src := read(t, path)
		if !strings.Contains(src, "CodeInvalidRequest") {
			return nil
		}
		for _, m := range constRE.FindAllStringSubmatch(src, -1) {
			codes[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !codes["invalid_request"] {
		t.Fatal("found no error codes in the code")
	}
	return codes
}

// TestErrorCodeTable checks the table marked "error codes": every code in
// it is one the service defines, and every code the service can answer
// with is in it (the two it never sends to a client, the 499 of a client
// that went away and the 500 of a bug, are named in the page's text).
func TestErrorCodeTable(t *testing.T) {
	tables := markedTables(t)["error codes"]
	if len(tables) != 1 {
		t.Fatalf("%d tables marked error codes, want 1", len(tables))
	}
	codes := apiCodes(t)
	inTable := map[string]bool{}
	codeRE := regexp.MustCompile("`([a-z_]+)`")
	for _, row := range tables[0] {
		if len(row) < 3 {
			t.Fatalf("error codes row %q: want status, code, when", row)
		}
		if _, err := strconv.Atoi(row[0]); err != nil {
			t.Errorf("error codes row %q: status %q is not a number", row, row[0])
		}
		for _, m := range codeRE.FindAllStringSubmatch(row[1], -1) {
			inTable[m[1]] = true
			if !codes[m[1]] {
				t.Errorf("error codes table: %q is no code of the service", m[1])
			}
		}
	}
	service := read(t, filepath.Join(root, "docs", "service.md"))
	for code := range codes {
		if !inTable[code] && !strings.Contains(service, "`"+code+"`") && !strings.Contains(service, " "+code+"`") {
			t.Errorf("code %q is neither in the error codes table nor in docs/service.md", code)
		}
	}
}

// TestMetricsList serves the API on miniredis, makes a listing and a
// purchase, and checks the metric names /metrics then exposes against the
// ones the metrics section of docs/service.md names (braces expanded:
// a_{b,c} is a_b and a_c).
func TestMetricsList(t *testing.T) {
	service := read(t, filepath.Join(root, "docs", "service.md"))
	_, section, ok := strings.Cut(service, "## Metrics")
	if !ok {
		t.Fatal("docs/service.md has no Metrics section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	documented := map[string]bool{}
	// A brace right after "_" lists name endings (lockmarket_a_{b,c});
	// after a name it lists the labels (lockmarket_a{op,strategy}).
	for _, m := range regexp.MustCompile("`(lockmarket_[a-z_]+(?:\\{[a-z_,]+\\})?)").FindAllStringSubmatch(section, -1) {
		name := m[1]
		if i := strings.Index(name, "{"); i > 0 && name[i-1] != '_' {
			name = name[:i]
		}
		for _, n := range expandBraces(name) {
			documented[n] = true
		}
	}

	b := redistest.Mini(t)
	m, err := market.New(b.Client, "docsmetrics")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv, err := httpapi.New(httpapi.Config{Market: m, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, req := range []struct{ path, body string }{
		{"/api/users", `{"id":"alice","name":"Alice","funds":100}`},
		{"/api/users", `{"id":"bob","name":"Bob","funds":0}`},
		{"/api/users/bob/inventory", `{"item":"ItemA"}`},
		{"/api/listings", `{"seller":"bob","item":"ItemA","price":5}`},
		{"/api/purchases", `{"buyer":"alice","seller":"bob","item":"ItemA","price":5}`},
	} {
		resp, err := http.Post(ts.URL+req.path, "application/json", strings.NewReader(req.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %s", req.path, resp.Status)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exposed := map[string]bool{}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "lockmarket_") {
			exposed[f.GetName()] = true
		}
	}
	if len(exposed) == 0 {
		t.Fatal("no lockmarket_ metric exposed")
	}
	for name := range exposed {
		if !documented[name] {
			t.Errorf("metric %s is exposed but not in docs/service.md", name)
		}
	}
	// A metric that only an event exposes (a lock lost) must at least be
	// one the code defines.
	var src strings.Builder
	err = filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			src.WriteString(read(t, path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range documented {
		if !exposed[name] && !strings.Contains(src.String(), `"`+name+`"`) {
			t.Errorf("docs/service.md names metric %s, which the code does not define", name)
		}
	}
}

// expandBraces expands one level of a{b,c}d into abd, acd.
func expandBraces(s string) []string {
	i, j := strings.Index(s, "{"), strings.Index(s, "}")
	if i < 0 || j < i {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[i+1:j], ",") {
		out = append(out, s[:i]+alt+s[j+1:])
	}
	return out
}

// TestPackageMap checks that the package map of docs/architecture.md names
// every package of the module and no package that does not exist.
func TestPackageMap(t *testing.T) {
	tables := markedTables(t)["packages"]
	if len(tables) != 1 {
		t.Fatalf("%d tables marked packages, want 1", len(tables))
	}
	mapped := map[string]bool{}
	for _, row := range tables[0] {
		mapped[strings.Trim(row[0], "`")] = true
	}
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for dir := range strings.Lines(string(out)) {
		rel, err := filepath.Rel(abs, strings.TrimSpace(dir))
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if rel == "docs" {
			continue // these tests
		}
		listed[rel] = true
		if !mapped[rel] {
			t.Errorf("package %s is not in the package map of docs/architecture.md", rel)
		}
	}
	for p := range mapped {
		if !listed[p] {
			t.Errorf("the package map names %s, which is no package of the module", p)
		}
	}
}

// TestInternalGroups checks the folders of internal/ against the table of
// docs/architecture.md: every folder right under internal/ is a group the
// table names, every package under internal/ lives in one, and the table
// names no folder that is not there.
func TestInternalGroups(t *testing.T) {
	tables := markedTables(t)["internal groups"]
	if len(tables) != 1 {
		t.Fatalf("%d tables marked internal groups, want 1", len(tables))
	}
	groups := map[string]bool{}
	for _, row := range tables[0] {
		groups[strings.Trim(row[0], "`")] = true
	}
	entries, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, e := range entries {
		name := "internal/" + e.Name()
		if !e.IsDir() {
			t.Errorf("%s: a file right under internal/; every package lives in a group's folder", name)
			continue
		}
		present[name] = true
		if !groups[name] {
			t.Errorf("folder %s is not in the table of internal/'s folders in docs/architecture.md", name)
		}
	}
	for g := range groups {
		if !present[g] {
			t.Errorf("the table of internal/'s folders names %s, which is no folder", g)
		}
	}
	if len(groups) > 10 {
		t.Errorf("internal/ has %d folders; at most 10 keep it readable", len(groups))
	}
}

// TestInternalLayers checks the order of the table of internal/'s
// folders in docs/architecture.md: a group's code, tests included,
// imports only the groups below it in the table (any test may use
// internal/testsupport too), so that no group imports another back.
func TestInternalLayers(t *testing.T) {
	order := tableColumn(t, "internal groups")
	for _, v := range layerViolations(order, moduleImports(t, "./internal/..."), group) {
		t.Error(v)
	}
}

// tableColumn is the first column of the one table of docs/ marked
// name, its backquotes trimmed.
func tableColumn(t *testing.T, name string) []string {
	t.Helper()
	tables := markedTables(t)[name]
	if len(tables) != 1 {
		t.Fatalf("%d tables marked %s, want 1", len(tables), name)
	}
	var column []string
	for _, row := range tables[0] {
		column = append(column, strings.Trim(row[0], "`"))
	}
	return column
}

// moduleImports lists, for the packages go list finds at patterns, their
// imports of the module's own packages, tests' imports marked.
func moduleImports(t *testing.T, patterns ...string) []packageImport {
	t.Helper()
	const module = "github.com/lockmarket/lockmarket/"
	args := append([]string{"list", "-f",
		`{{.ImportPath}} {{join .Imports " "}} | {{join .TestImports " "}} {{join .XTestImports " "}}`},
		patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var imports []packageImport
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		from := strings.TrimPrefix(fields[0], module)
		test := false
		for _, f := range fields[1:] {
			if f == "|" {
				test = true
			} else if to, ok := strings.CutPrefix(f, module); ok {
				imports = append(imports, packageImport{from, to, test})
			}
		}
	}
	return imports
}

// packageImport is one import of a package of the module: from and to
// are paths inside the module; test says only its tests import it.
type packageImport struct {
	from, to string
	test     bool
}

// group is the folder right under internal/ that holds the package at
// path, or "" for a package outside internal/.
func group(path string) string {
	parts := strings.Split(path, "/")
	if len(parts) < 2 || parts[0] != "internal" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// layerViolations lists the imports that go from a group of order (top
// first) to a group that is not below it; groupOf names the group of a
// package ("" for one outside every group); a test may import
// internal/testsupport from anywhere.
func layerViolations(order []string, imports []packageImport, groupOf func(string) string) []string {
	rank := map[string]int{}
	for i, g := range order {
		rank[g] = i
	}
	var out []string
	seen := map[[2]string]bool{}
	for _, imp := range imports {
		from, to := groupOf(imp.from), groupOf(imp.to)
		if seen[[2]string{imp.from, imp.to}] {
			continue
		}
		if from == "" || to == "" || from == to || imp.test && to == "internal/testsupport" {
			continue
		}
		if rank[to] <= rank[from] {
			seen[[2]string{imp.from, imp.to}] = true
			out = append(out, fmt.Sprintf("%s imports %s: %s is not below %s in the table of "+
				"docs/architecture.md", imp.from, imp.to, to, from))
		}
	}
	return out
}

func TestLayerViolations(t *testing.T) {
	order := []string{"internal/testsupport", "internal/a", "internal/b"}
	tests := []struct {
		name string
		imp  packageImport
		bad  bool
	}{
		{"down", packageImport{"internal/a/x", "internal/b/y", false}, false},
		{"up", packageImport{"internal/b/y", "internal/a/x", false}, true},
		{"within a group", packageImport{"internal/b/y", "internal/b/z", false}, false},
		{"a test up to testsupport", packageImport{"internal/b/y", "internal/testsupport/r", true}, false},
		{"code up to testsupport", packageImport{"internal/b/y", "internal/testsupport/r", false}, true},
		{"a test up to another group", packageImport{"internal/b/y", "internal/a/x", true}, true},
		{"outside internal/", packageImport{"explore", "internal/a/x", false}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := layerViolations(order, []packageImport{tt.imp}, group)
			if (len(got) > 0) != tt.bad {
				t.Errorf("layerViolations(%v) = %q, want a violation: %v", tt.imp, got, tt.bad)
			}
		})
	}
}

// TestDependencySketch checks the dependency sketch of
// docs/architecture.md: every arrow is an import of the module's code,
// and the arrows from the core (market, locking, watchtx) are all of its
// imports within the module.
func TestDependencySketch(t *testing.T) {
	text := read(t, filepath.Join(root, "docs", "architecture.md"))
	_, sketch, ok := strings.Cut(text, "## Dependency sketch")
	if !ok {
		t.Fatal("docs/architecture.md has no dependency sketch")
	}
	_, sketch, _ = strings.Cut(sketch, "```text\n")
	sketch, _, _ = strings.Cut(sketch, "```")
	drawn := map[[2]string]bool{}
	for line := range strings.Lines(sketch) {
		from, to, ok := strings.Cut(line, "──>")
		if !ok {
			t.Errorf("sketch line %q has no arrow", line)
			continue
		}
		for _, a := range expandList(from) {
			for _, b := range expandList(to) {
				drawn[[2]string{a, b}] = true
			}
		}
	}
	const module = "github.com/lockmarket/lockmarket/"
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[[2]string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		from := strings.TrimPrefix(fields[0], module)
		for _, imp := range fields[1:] {
			if to, ok := strings.CutPrefix(imp, module); ok {
				imports[[2]string{from, to}] = true
			}
		}
	}
	for e := range drawn {
		if !imports[e] {
			t.Errorf("the sketch draws %s ──> %s, which is no import", e[0], e[1])
		}
	}
	for e := range imports {
		if (e[0] == "market" || e[0] == "locking" || e[0] == "watchtx") && !drawn[e] {
			t.Errorf("the core's import %s ──> %s is not in the sketch", e[0], e[1])
		}
	}
}

// expandList splits "a/{b, c}, d" into a/b, a/c and d.
func expandList(s string) []string {
	var out []string
	depth, start := 0, 0
	add := func(item string) {
		item = strings.TrimSpace(item)
		if item == "" {
			return
		}
		i, j := strings.Index(item, "{"), strings.Index(item, "}")
		if i < 0 || j < i {
			out = append(out, item)
			return
		}
		for _, alt := range strings.Split(item[i+1:j], ",") {
			out = append(out, item[:i]+strings.TrimSpace(alt)+item[j+1:])
		}
	}
	for i, r := range s {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				add(s[start:i])
				start = i + 1
			}
		}
	}
	add(s[start:])
	return out
}
