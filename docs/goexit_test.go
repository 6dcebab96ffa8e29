package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// goexitMethods are the methods of testing.T, B and TB that end the
// calling goroutine through runtime.Goexit. Called from a goroutine other
// than the test's, they end that goroutine instead, and the test goes on
// (or, if it has ended, the package's run panics).
var goexitMethods = []string{"Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow"}

// spawners are the methods whose function argument runs on a goroutine of
// its own: errgroup.Group.Go, sync.WaitGroup.Go, testing.B.RunParallel.
var spawners = []string{"Go", "RunParallel"}

// ownGoroutine are the methods whose function argument runs on a
// goroutine that may end the test, or not at all where it is written: a
// subtest (testing.T.Run) and a cleanup.
var ownGoroutine = []string{"Run", "Cleanup"}

// modulePath is the import path of the module at root.
const modulePath = "github.com/lockmarket/lockmarket"

// goexitIndex holds the parsed Go files of a module and answers whether a
// function may end its goroutine with runtime.Goexit.
type goexitIndex struct {
	fset   *token.FileSet
	module string
	// funcs are the declared functions and methods by folder, then by
	// name ("F", or "M." for a method M of any type of that folder).
	funcs map[string]map[string]*ast.FuncDecl
	// fileOf is the file of each declaration, for its imports.
	fileOf map[*ast.FuncDecl]*ast.File
	// roots are the files whose goroutines are checked.
	roots []*ast.File
	// rel names each file by its path relative to the module.
	rel  map[*ast.File]string
	memo map[*ast.FuncDecl]string
}

// isRootFile reports whether the goroutines of the file at rel are
// checked: tests, and the packages that only tests import.
func isRootFile(rel string) bool {
	return strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "internal/testsupport/") ||
		strings.HasPrefix(rel, "explore/exploretest/")
}

// loadGoexitIndex parses every Go file under dir, the root of the module
// whose import path is module.
func loadGoexitIndex(dir, module string) (*goexitIndex, error) {
	ix := &goexitIndex{fset: token.NewFileSet(), module: module,
		funcs: map[string]map[string]*ast.FuncDecl{}, fileOf: map[*ast.FuncDecl]*ast.File{},
		rel: map[*ast.File]string{}, memo: map[*ast.FuncDecl]string{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator)))
		if d.IsDir() {
			if p != dir && (rel == "results" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		f, err := parser.ParseFile(ix.fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ix.add(f, rel)
		return nil
	})
	return ix, err
}

// add indexes the declarations of f, the file at rel.
func (ix *goexitIndex) add(f *ast.File, rel string) {
	ix.rel[f] = rel
	if isRootFile(rel) {
		ix.roots = append(ix.roots, f)
	}
	dir := path.Dir(rel)
	if ix.funcs[dir] == nil {
		ix.funcs[dir] = map[string]*ast.FuncDecl{}
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := fn.Name.Name
		if fn.Recv != nil {
			name += "."
		}
		// A method name shared by two types of a folder: either may be
		// the one called, so the first that may end its goroutine wins.
		if old := ix.funcs[dir][name]; old == nil || ix.mayExit(old) == "" {
			ix.funcs[dir][name] = fn
			ix.fileOf[fn] = f
		}
	}
}

// imports maps the names f gives its imports to their folders in the
// module ("" for an import from outside it).
func (ix *goexitIndex) imports(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		dir := ""
		if rest, ok := strings.CutPrefix(p, ix.module+"/"); ok {
			dir = rest
		}
		out[name] = dir
	}
	return out
}

// scope is where a body is read: its file's folder and imports, and the
// function literals its enclosing declaration gives names to.
type scope struct {
	dir      string
	imports  map[string]string
	closures map[string]*ast.FuncLit
}

// scopeOf is the scope of the declaration fn of file f.
func (ix *goexitIndex) scopeOf(f *ast.File, fn *ast.FuncDecl) scope {
	s := scope{dir: path.Dir(ix.rel[f]), imports: ix.imports(f), closures: map[string]*ast.FuncLit{}}
	if fn == nil {
		return s
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, rhs := range n.Rhs {
				lit, ok := rhs.(*ast.FuncLit)
				if id, isID := n.Lhs[min(i, len(n.Lhs)-1)].(*ast.Ident); ok && isID {
					s.closures[id.Name] = lit
				}
			}
		case *ast.ValueSpec:
			for i, v := range n.Values {
				if lit, ok := v.(*ast.FuncLit); ok && i < len(n.Names) {
					s.closures[n.Names[i].Name] = lit
				}
			}
		}
		return true
	})
	return s
}

// mayExit says how fn may end its goroutine through runtime.Goexit
// ("t.Fatal at file:line", through the functions it calls), or "" if it
// cannot as far as the index can tell.
func (ix *goexitIndex) mayExit(fn *ast.FuncDecl) string {
	if why, ok := ix.memo[fn]; ok {
		return why
	}
	ix.memo[fn] = "" // a recursive call adds nothing
	f := ix.fileOf[fn]
	if f == nil {
		return ""
	}
	why := ix.bodyExits(fn.Body, ix.scopeOf(f, fn), map[*ast.FuncLit]bool{})
	ix.memo[fn] = why
	return why
}

// bodyExits says how body may end its goroutine, or "". Function literals
// in it count as run by it, except those given to a subtest or a cleanup,
// and goroutines it starts are not its own (each is checked as a root).
func (ix *goexitIndex) bodyExits(body ast.Node, s scope, seen map[*ast.FuncLit]bool) string {
	var why string
	ast.Inspect(body, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			return false
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && slices.Contains(ownGoroutine, sel.Sel.Name) {
				for _, arg := range n.Args {
					if _, lit := arg.(*ast.FuncLit); !lit && why == "" {
						why = ix.bodyExits(arg, s, seen)
					}
				}
				return false
			}
			why = ix.callExits(n, s, seen)
		}
		return why == ""
	})
	return why
}

// callExits says how call may end its goroutine, or "".
func (ix *goexitIndex) callExits(call *ast.CallExpr, s scope, seen map[*ast.FuncLit]bool) string {
	at := ix.fset.Position(call.Pos())
	where := fmt.Sprintf("%s:%d", filepath.Base(at.Filename), at.Line)
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		if lit := s.closures[fun.Name]; lit != nil && !seen[lit] {
			seen[lit] = true
			if why := ix.bodyExits(lit.Body, s, seen); why != "" {
				return fmt.Sprintf("%s (%s) -> %s", fun.Name, where, why)
			}
			return ""
		}
		if fn := ix.funcs[s.dir][fun.Name]; fn != nil {
			if why := ix.mayExit(fn); why != "" {
				return fmt.Sprintf("%s (%s) -> %s", fun.Name, where, why)
			}
		}
	case *ast.SelectorExpr:
		name := fun.Sel.Name
		if x, ok := fun.X.(*ast.Ident); ok {
			if dir, imported := s.imports[x.Name]; imported {
				if x.Name == "runtime" && name == "Goexit" {
					return "runtime.Goexit at " + where
				}
				if fn := ix.funcs[dir][name]; dir != "" && fn != nil {
					if why := ix.mayExit(fn); why != "" {
						return fmt.Sprintf("%s.%s (%s) -> %s", x.Name, name, where, why)
					}
				}
				return ""
			}
		}
		if slices.Contains(goexitMethods, name) {
			return fmt.Sprintf("%s at %s", name, where)
		}
		if fn := ix.funcs[s.dir][name+"."]; fn != nil {
			if why := ix.mayExit(fn); why != "" {
				return fmt.Sprintf("%s (%s) -> %s", name, where, why)
			}
		}
	}
	return ""
}

// goroutineFatals lists, for every goroutine the root files start (a go
// statement, or a function given to a spawner), each way it may end
// itself through runtime.Goexit, as "file:line: ...".
func (ix *goexitIndex) goroutineFatals() []string {
	var out []string
	for _, f := range ix.roots {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			s := ix.scopeOf(f, fn)
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				var bodies []ast.Expr
				switch n := n.(type) {
				case *ast.GoStmt:
					// The call itself and every function literal given to it.
					bodies = append([]ast.Expr{n.Call}, n.Call.Args...)
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && slices.Contains(spawners, sel.Sel.Name) {
						bodies = n.Args
					}
				}
				for _, b := range bodies {
					if why := ix.goroutineExits(b, s); why != "" {
						at := ix.fset.Position(b.Pos())
						out = append(out, fmt.Sprintf("%s:%d: a goroutine of %s may call %s",
							ix.rel[f], at.Line, fn.Name.Name, why))
					}
				}
				return true
			})
		}
	}
	return out
}

// goroutineExits says how the goroutine body e (a call, or a function
// literal run by one) may end itself, or "".
func (ix *goexitIndex) goroutineExits(e ast.Expr, s scope) string {
	switch e := e.(type) {
	case *ast.FuncLit:
		return ix.bodyExits(e.Body, s, map[*ast.FuncLit]bool{})
	case *ast.CallExpr:
		if lit, ok := e.Fun.(*ast.FuncLit); ok {
			return ix.bodyExits(lit.Body, s, map[*ast.FuncLit]bool{})
		}
		return ix.callExits(e, s, map[*ast.FuncLit]bool{})
	}
	return ""
}

// TestNoFatalInGoroutine: no test, and no package only tests import, calls
// t.Fatal, FailNow, Skip or their kin (anything that ends its goroutine
// with runtime.Goexit) from a goroutine it starts, directly or through
// the functions it calls. Such a call ends only that goroutine: the test
// goes on as if it had not failed, and if the test has ended by then the
// package's run panics. A goroutine reports with t.Error, or sends its
// error back to the test's goroutine.
func TestNoFatalInGoroutine(t *testing.T) {
	ix, err := loadGoexitIndex(root, modulePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.roots) < 100 {
		t.Fatalf("only %d test files read: is root the module?", len(ix.roots))
	}
	for _, msg := range ix.goroutineFatals() {
		t.Error(msg)
	}
}

// TestGoroutineFatalCheck runs the check of TestNoFatalInGoroutine on a
// scratch module: each bad test must be found, and the good ones not.
func TestGoroutineFatalCheck(t *testing.T) {
	const bad = `package p

import (
	"sync"
	"testing"
)

func helper(t *testing.T) { t.Helper(); wait(t) }
func wait(t *testing.T)   { t.Fatalf("timeout") }

func TestDirect(t *testing.T) {
	done := make(chan bool)
	go func() { defer close(done); t.Fatal("boom") }()
	<-done
}

func TestThroughHelper(t *testing.T) {
	var wg sync.WaitGroup
	wg.Go(func() { helper(t) })
	wg.Wait()
}

func TestClosure(t *testing.T) {
	check := func() { t.FailNow() }
	go func() { check() }()
}

func TestNamed(t *testing.T) { go wait(t) }
`
	const good = `package p

import "testing"

func report(t *testing.T, err error) { t.Error(err) }

func TestGood(t *testing.T) {
	errs := make(chan error, 1)
	go func() { errs <- nil; report(t, nil) }()
	go func() {
		t.Run("sub", func(t *testing.T) { t.Fatal("a subtest may") })
	}()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}
`
	dir := t.TempDir()
	for name, text := range map[string]string{"bad_test.go": bad, "good_test.go": good} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := loadGoexitIndex(dir, "example.com/p")
	if err != nil {
		t.Fatal(err)
	}
	got := ix.goroutineFatals()
	for _, want := range []string{"TestDirect may call Fatal", "TestThroughHelper may call helper",
		"TestClosure may call check", "TestNamed may call wait"} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("the check missed %q; it found %q", want, got)
		}
	}
	if len(got) != 4 {
		t.Errorf("the check found %d goroutines, want the 4 bad ones: %q", len(got), got)
	}
}
