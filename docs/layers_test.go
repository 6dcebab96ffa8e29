package docs_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The import rules of the explorer's packages are written once, in each
// package's comment, in two sentences that people read and this file
// checks:
//
//	Of this module, it imports only A, B and dir/{C, D}: ...
//	Its tests also import E.
//
// (or "Of this module, it imports nothing."). Each item of the list ends
// with a name, in parentheses or not, after words for people ("the
// market", "the lock catalogue (locking)"): a package path inside the
// module, or "dir/..." for the packages under dir. The list ends at the
// sentence's end, a colon or a semicolon. The standard library and other
// modules are not named.
const (
	importsMarker = "Of this module, it imports "
	testsMarker   = "Its tests also import "
)

// ruleFolders are the folders whose packages state their import rules:
// the explorer's public packages and its engine, wherever it stands.
var ruleFolders = []string{"explore", "internal/explore"}

// importRule is what a package's comment says it imports: code, what its
// code imports; tests, what only its tests import.
type importRule struct {
	code, tests []string
}

var errNoRule = errors.New("the package comment states no import rule " +
	"(\"" + importsMarker + "only ...\")")

// parseRule reads the import rule of a package comment.
func parseRule(doc string) (importRule, error) {
	doc = strings.Join(strings.Fields(doc), " ")
	var r importRule
	_, rest, ok := strings.Cut(doc, importsMarker)
	if !ok {
		return r, errNoRule
	}
	switch {
	case strings.HasPrefix(rest, "nothing"):
	case strings.HasPrefix(rest, "only "):
		r.code = ruleList(strings.TrimPrefix(rest, "only "))
	default:
		return r, fmt.Errorf("%q: want \"%sonly ...\" or \"%snothing\"", clip(rest),
			importsMarker, importsMarker)
	}
	if _, rest, ok := strings.Cut(doc, testsMarker); ok {
		r.tests = ruleList(rest)
	}
	return r, nil
}

// clip is the first words of s, for a message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// ruleList is the names of a rule's list, which s begins with.
func ruleList(s string) []string {
	end := len(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ':' || c == ';' {
			end = i
			break
		}
		// A sentence ends at a period that is not part of "...".
		dots := c == '.' && (i+1 == len(s) || s[i+1] == ' ') && (i == 0 || s[i-1] != '.')
		if dots {
			end = i
			break
		}
	}
	s = s[:end]
	var out []string
	for _, part := range strings.Split(s, " and ") {
		for _, item := range expandList(part) {
			out = append(out, ruleName(item))
		}
	}
	return out
}

// ruleName is the name an item of a rule's list ends with: its last word,
// out of its parentheses ("the lock catalogue (locking)" names locking).
func ruleName(item string) string {
	words := strings.Fields(item)
	if len(words) == 0 {
		return ""
	}
	return strings.Trim(words[len(words)-1], "()")
}

// allows reports whether name, in a rule, names the package pkg.
func allows(name, pkg string) bool {
	if dir, ok := strings.CutSuffix(name, "/..."); ok {
		return pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	return name == pkg
}

// ruleViolations compares the imports of the package pkg with its rule:
// each import its code makes is in the rule's code list, each its tests
// make in either list, and each name of a list is imported (so the
// comment tells no more than is true).
func ruleViolations(pkg string, r importRule, imports []packageImport) []string {
	var out []string
	used := map[string]bool{}
	for _, imp := range imports {
		if imp.from != pkg || imp.to == pkg {
			continue
		}
		inCode := slices.ContainsFunc(r.code, func(n string) bool { return allows(n, imp.to) })
		inTests := slices.ContainsFunc(r.tests, func(n string) bool { return allows(n, imp.to) })
		switch {
		case !imp.test && !inCode:
			out = append(out, fmt.Sprintf("%s imports %s, which its package comment "+
				"does not name (%q)", pkg, imp.to, importsMarker+"only ..."))
		case imp.test && !inCode && !inTests:
			out = append(out, fmt.Sprintf("the tests of %s import %s, which its package "+
				"comment does not name (%q)", pkg, imp.to, testsMarker+"..."))
		}
		for _, n := range r.code {
			used[n] = used[n] || !imp.test && allows(n, imp.to)
		}
		for _, n := range r.tests {
			used[n] = used[n] || imp.test && allows(n, imp.to)
		}
	}
	for _, n := range slices.Concat(r.code, r.tests) {
		if !used[n] {
			out = append(out, fmt.Sprintf("the package comment of %s names %s, "+
				"which it does not import", pkg, n))
		}
	}
	return out
}

// ruledPackage is a package of ruleFolders, with its imports.
type ruledPackage struct {
	path, dir string
}

// ruledPackages lists the packages of ruleFolders and every import of the
// module's packages they make, tests included.
func ruledPackages(t *testing.T) ([]ruledPackage, []packageImport) {
	t.Helper()
	var patterns []string
	for _, f := range ruleFolders {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			patterns = append(patterns, "./"+f+"/...")
		}
	}
	const module = "github.com/lockmarket/lockmarket/"
	cmd := exec.Command("go", append([]string{"list", "-f",
		`{{.ImportPath}} {{.Dir}} {{join .Imports " "}} | {{join .TestImports " "}} ` +
			`{{join .XTestImports " "}}`}, patterns...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []ruledPackage
	var imports []packageImport
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		from := strings.TrimPrefix(fields[0], module)
		pkgs = append(pkgs, ruledPackage{from, fields[1]})
		test := false
		for _, f := range fields[2:] {
			if f == "|" {
				test = true
			} else if to, ok := strings.CutPrefix(f, module); ok {
				imports = append(imports, packageImport{from, to, test})
			}
		}
	}
	return pkgs, imports
}

// packageDoc is the package comment of the Go package in dir.
func packageDoc(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var doc []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if af.Doc != nil {
			doc = append(doc, af.Doc.Text())
		}
	}
	return strings.Join(doc, "\n")
}

// TestExploreLayers checks the import rules of the explorer's packages:
// every import of each package (tests included) is one its package
// comment names, every name there is imported, and every package of the
// explorer a comment names stands below it in the table of explore's
// layers in docs/architecture.md.
func TestExploreLayers(t *testing.T) {
	order := tableColumn(t, "explore layers")
	pkgs, imports := ruledPackages(t)
	var ruled []packageImport
	for _, p := range pkgs {
		if !slices.Contains(order, p.path) {
			t.Errorf("package %s is not in the table of explore's layers", p.path)
		}
		r, err := parseRule(packageDoc(t, p.dir))
		if err != nil {
			t.Errorf("package %s: %v", p.path, err)
			continue
		}
		for _, v := range ruleViolations(p.path, r, imports) {
			t.Error(v)
		}
		for _, n := range r.code {
			ruled = append(ruled, packageImport{p.path, strings.TrimSuffix(n, "/..."), false})
		}
		for _, n := range r.tests {
			ruled = append(ruled, packageImport{p.path, strings.TrimSuffix(n, "/..."), true})
		}
	}
	for _, v := range layerViolations(order, ruled, explorePackage) {
		t.Error("the package comment says so: " + v)
	}
}

// explorePackage is path when it is a package of the explorer, else "".
func explorePackage(path string) string {
	for _, f := range ruleFolders {
		if path == f || strings.HasPrefix(path, f+"/") {
			return path
		}
	}
	return ""
}

// TestExploreLayerViolation shows the check of explore's layers failing:
// the runtime importing a target, or a test of it doing so.
func TestExploreLayerViolation(t *testing.T) {
	order := []string{"explore", "internal/explore/targets", "internal/explore/sched"}
	same := func(p string) string { return p }
	for _, tt := range []struct {
		imp packageImport
		bad bool
	}{
		{packageImport{"internal/explore/targets", "internal/explore/sched", false}, false},
		{packageImport{"internal/explore/sched", "internal/explore/targets", false}, true},
		{packageImport{"internal/explore/sched", "internal/explore/targets", true}, true},
		{packageImport{"internal/explore/sched", "explore", false}, true},
	} {
		if got := layerViolations(order, []packageImport{tt.imp}, same); (len(got) > 0) != tt.bad {
			t.Errorf("%v: %q, want a violation: %v", tt.imp, got, tt.bad)
		}
	}
}

// TestImportRules shows the reading of a package comment's rule and its
// check against the imports failing where the comment is not true.
func TestImportRules(t *testing.T) {
	doc := "Package sched runs clients.\n\n" +
		"Of this module, it imports only internal/explore/search,\n" +
		"internal/redis/{rediscmd, redisserver} and the catalogue (locking/...): nothing above it.\n" +
		"Its tests also import internal/testsupport/redistest. It may import go-redis."
	r, err := parseRule(doc)
	if err != nil {
		t.Fatal(err)
	}
	wantCode := []string{"internal/explore/search", "internal/redis/rediscmd",
		"internal/redis/redisserver", "locking/..."}
	if !slices.Equal(r.code, wantCode) || !slices.Equal(r.tests, []string{"internal/testsupport/redistest"}) {
		t.Fatalf("parseRule: %q, %q", r.code, r.tests)
	}
	if _, err := parseRule("Package p.\n\nOf this module, it imports nothing."); err != nil {
		t.Errorf("nothing: %v", err)
	}
	if _, err := parseRule("Package p does things."); !errors.Is(err, errNoRule) {
		t.Errorf("no rule: %v", err)
	}
	all := []packageImport{
		{"internal/explore/sched", "internal/explore/search", false},
		{"internal/explore/sched", "internal/redis/rediscmd", false},
		{"internal/explore/sched", "internal/redis/redisserver", false},
		{"internal/explore/sched", "locking/locktrace", false},
		{"internal/explore/sched", "internal/testsupport/redistest", true},
	}
	if v := ruleViolations("internal/explore/sched", r, all); len(v) > 0 {
		t.Errorf("the imports the rule names: %q", v)
	}
	for _, tc := range []struct {
		name    string
		imports []packageImport
	}{
		{"code imports what the rule does not name",
			append(slices.Clone(all),
				packageImport{"internal/explore/sched", "internal/explore/targets", false})},
		{"a test imports what the rule does not name",
			append(slices.Clone(all), packageImport{"internal/explore/sched", "market", true})},
		{"code imports what only the tests may", append(slices.Clone(all[:4]),
			packageImport{"internal/explore/sched", "internal/testsupport/redistest", false})},
		{"the rule names what is not imported", all[1:]},
	} {
		if v := ruleViolations("internal/explore/sched", r, tc.imports); len(v) == 0 {
			t.Errorf("%s: no violation", tc.name)
		}
	}
}

// TestPublicExplorer checks where the public explorer (explore,
// explore/exploretest) stands: above internal/, which never imports it
// (the engine the service and the commands use is internal/explore), and
// importing, of internal/, only the engine and the groups below it in the
// table of internal/'s folders (its tests may use internal/testsupport
// too), so that no arrow runs back up between them.
func TestPublicExplorer(t *testing.T) {
	order := tableColumn(t, "internal groups")
	imports := moduleImports(t, "./internal/...", "./explore/...")
	for _, v := range publicViolations(order, imports) {
		t.Error(v)
	}
}

// engineGroup is the group of internal/ that holds the explorer's engine.
const engineGroup = "internal/explore"

// publicViolations lists the imports that put the public explorer
// anywhere but above internal/ (order: the table of internal/'s folders,
// top first): a package of internal/ importing it, or it importing a group
// above engineGroup.
func publicViolations(order []string, imports []packageImport) []string {
	public := func(p string) bool { return p == "explore" || strings.HasPrefix(p, "explore/") }
	floor := slices.Index(order, engineGroup)
	var out []string
	for _, imp := range imports {
		to := group(imp.to)
		if group(imp.from) != "" && public(imp.to) {
			out = append(out, fmt.Sprintf("%s imports %s: nothing of internal/ imports the public "+
				"explorer (the engine is %s)", imp.from, imp.to, engineGroup))
		}
		if public(imp.from) && to != "" && !(imp.test && to == "internal/testsupport") &&
			slices.Index(order, to) < floor {
			out = append(out, fmt.Sprintf("%s imports %s: the public explorer imports, of "+
				"internal/, only %s and the groups below it in docs/architecture.md", imp.from,
				imp.to, engineGroup))
		}
	}
	return out
}

// TestPublicViolations shows the check of where the public explorer
// stands failing.
func TestPublicViolations(t *testing.T) {
	order := []string{"internal/testsupport", "internal/service", "internal/failure",
		"internal/explore", "internal/sim", "internal/redis"}
	for _, tt := range []struct {
		imp packageImport
		bad bool
	}{
		{packageImport{"internal/service/lab", "internal/explore/sched", false}, false},
		{packageImport{"internal/service/lab", "explore", false}, true},
		{packageImport{"internal/failure/gallery", "explore/exploretest", true}, true},
		{packageImport{"internal/redis/rediscmd", "explore", false}, true},
		{packageImport{"explore", "internal/explore/sched", false}, false},
		{packageImport{"explore", "internal/redis/redisserver", false}, false},
		{packageImport{"explore", "internal/failure/gallery", false}, true},
		{packageImport{"explore/exploretest", "internal/service/api", false}, true},
		{packageImport{"explore/exploretest", "internal/testsupport/redistest", true}, false},
		{packageImport{"explore", "internal/testsupport/redistest", false}, true},
	} {
		if got := publicViolations(order, []packageImport{tt.imp}); (len(got) > 0) != tt.bad {
			t.Errorf("%v: %q, want a violation: %v", tt.imp, got, tt.bad)
		}
	}
}

// TestExplorerLocksPrivate checks that no package of the explorer
// exports a lock: no exported field (or embedded field of an exported
// type) is a sync.Mutex or sync.RWMutex, so the runtime's state is
// locked only inside the package that holds it.
func TestExplorerLocksPrivate(t *testing.T) {
	pkgs, _ := ruledPackages(t)
	fset := token.NewFileSet()
	for _, p := range pkgs {
		files, err := filepath.Glob(filepath.Join(p.dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range exportedLocks(af) {
				t.Errorf("%s: %s exports a lock", p.path, name)
			}
		}
	}
}

// exportedLocks names the exported fields of f's struct types that are
// locks (sync.Mutex, sync.RWMutex, or pointers to them), and the locks
// embedded in its exported types, whose Lock methods they export.
func exportedLocks(f *ast.File) []string {
	isLock := func(e ast.Expr) bool {
		if s, ok := e.(*ast.StarExpr); ok {
			e = s.X
		}
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && pkg.Name == "sync" && (sel.Sel.Name == "Mutex" || sel.Sel.Name == "RWMutex")
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return true
		}
		for _, fl := range st.Fields.List {
			if !isLock(fl.Type) {
				continue
			}
			if len(fl.Names) == 0 && ts.Name.IsExported() {
				out = append(out, ts.Name.Name+" (embedded)")
			}
			for _, nm := range fl.Names {
				if nm.IsExported() {
					out = append(out, ts.Name.Name+"."+nm.Name)
				}
			}
		}
		return true
	})
	return out
}

// TestExportedLocksFound shows the check of the explorer's locks failing.
func TestExportedLocksFound(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want []string
	}{
		{"type world struct{ Mu sync.Mutex }", []string{"world.Mu"}},
		{"type World struct{ mu sync.Mutex }", nil},
		{"type World struct{ sync.RWMutex }", []string{"World (embedded)"}},
		{"type world struct{ *sync.Mutex }", nil},
		{"type Explorer struct{ Lock *sync.Mutex; n int }", []string{"Explorer.Lock"}},
		{"type Explorer struct{ Mu sync.WaitGroup }", nil},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+tt.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := exportedLocks(f); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.src, got, tt.want)
		}
	}
}
