package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The longest a function of the product code may be, in lines from its
// "func" to its closing brace: maxCoreLines in the commands and the core,
// maxLines anywhere else. Tests are not measured.
const (
	maxCoreLines = 80
	maxLines     = 120
)

// coreDirs are the folders held to maxCoreLines (with their subfolders).
var coreDirs = []string{"cmd", "market", "locking", "watchtx"}

// longYet are the functions still longer than their limit, by
// "path:name", with the reason they are not split yet. The test fails
// when one is split (remove it here) and when any other function is too
// long: the list only shrinks.
var longYet = map[string]string{
	"cmd/simulate/explore.go:parseExploreFlags": "the explorer's flags, changing with the explorer; parsing moves into explore",
	"cmd/simulate/explore.go:runExplore":        "the explorer's reporting, changing with the explorer",
}

// TestFunctionLength reads every non-test Go file of the module (bench/
// is a module of its own) and checks each function's length.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			if rel == "bench" || rel == "results" || strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for name, msg := range longFuncs(t, fset, path, rel) {
			seen[name] = true
			if _, ok := longYet[name]; !ok {
				t.Error(msg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range longYet {
		if !seen[name] {
			t.Errorf("%s is within its limit now: remove it from longYet", name)
		}
	}
}

// longFuncs parses the file at path and describes each function longer
// than its limit, by "path:name".
func longFuncs(t *testing.T, fset *token.FileSet, path, rel string) map[string]string {
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	limit := maxLines
	if slices.ContainsFunc(coreDirs, func(d string) bool { return strings.HasPrefix(rel, d+"/") }) {
		limit = maxCoreLines
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		if n > limit {
			name := rel + ":" + fn.Name.Name
			out[name] = fmt.Sprintf("%s is %d lines, more than %d", name, n, limit)
		}
	}
	return out
}
