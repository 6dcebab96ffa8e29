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

// TestFunctionLength reads every non-test Go file of the tree, results/
// and the module of bench/ included, and checks each function's length.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, msg := range longFuncs(t, fset, path, rel) {
			t.Error(msg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// longFuncs parses the file at path and describes each function longer
// than its limit, by "path:name".
func longFuncs(t *testing.T, fset *token.FileSet, path, rel string) []string {
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	limit := maxLines
	if slices.ContainsFunc(coreDirs, func(d string) bool { return strings.HasPrefix(rel, d+"/") }) {
		limit = maxCoreLines
	}
	var out []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		if n > limit {
			out = append(out, fmt.Sprintf("%s:%s is %d lines, more than %d", rel, fn.Name.Name, n, limit))
		}
	}
	return out
}
