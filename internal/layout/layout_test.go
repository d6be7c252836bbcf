package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// root is the module's directory.
func root(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// maxFunctionLines bounds a function outside tests; longer ones hide more
// than one idea. Help text is data, not logic, and is not counted.
const maxFunctionLines = 80

// TestNoFunctionIsTooLong parses every non-test Go file of the module.
func TestNoFunctionIsTooLong(t *testing.T) {
	dir := root(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			checked++
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1 - helpTextLines(fset, fn)
			if lines > maxFunctionLines {
				rel, _ := filepath.Rel(dir, path)
				t.Errorf("%s:%d: %s is %d lines long, beyond %d", rel, fset.Position(fn.Pos()).Line, fn.Name.Name, lines, maxFunctionLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 500 {
		t.Fatalf("checked %d functions; the module has far more, so the walk missed files", checked)
	}
}

// helpTextLines counts the lines of the multi-line string literals in a
// function: a command's usage and examples.
func helpTextLines(fset *token.FileSet, fn *ast.FuncDecl) int {
	n := 0
	ast.Inspect(fn.Body, func(node ast.Node) bool {
		if lit, ok := node.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.HasPrefix(lit.Value, "`") {
			n += fset.Position(lit.End()).Line - fset.Position(lit.Pos()).Line
		}
		return true
	})
	return n
}
