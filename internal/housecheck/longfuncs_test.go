package housecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the house limit on a function's length, its signature
// and closing brace included; tests are exempt.
const maxFuncLines = 150

// TestNoLongFunctions: no function or function literal of the module's
// non-test source is over maxFuncLines lines (a long one becomes steps
// with names).
func TestNoLongFunctions(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata" || d.Name() == "store") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			name := "a function literal"
			var body *ast.BlockStmt
			switch n := n.(type) {
			case *ast.FuncDecl:
				name, body = n.Name.Name, n.Body
			case *ast.FuncLit:
				body = n.Body
			}
			if body == nil {
				return true
			}
			start := fset.Position(n.Pos())
			if lines := fset.Position(body.End()).Line - start.Line + 1; lines > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines, over %d: split it into steps with names", p, start.Line, name, lines, maxFuncLines)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
