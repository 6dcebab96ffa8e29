package market_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function of the core (market, locking
// and its sub-packages, watchtx) may have, its signature and closing brace
// included: the core is read to learn from, so each function must fit on
// a screen. Tests are not counted.
const maxFuncLines = 80

// TestFunctionLength fails on any function of the core longer than
// maxFuncLines.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	funcs := 0
	for _, dir := range []string{".", "../locking", "../watchtx"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				funcs++
				start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
				if n := end.Line - start.Line + 1; n > maxFuncLines {
					t.Errorf("%s: %s has %d lines, more than %d", start, fn.Name.Name, n, maxFuncLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if funcs < 100 {
		t.Fatalf("read only %d functions: the core is not where the test looks", funcs)
	}
}
