package integration

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestEverySuiteRuns: a check.v1 suite runs only when a go test calls
// runSuite with it (check.Suite registrations are not run), so a suite
// added without its func Test…Suite would pass by never running. Every
// type with Test methods in this package must be handed to runSuite.
func TestEverySuiteRuns(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	suites := map[string]string{} // type → a file declaring a Test method on it
	run := map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if recv := recvName(n); recv != "" && strings.HasPrefix(n.Name.Name, "Test") {
					suites[recv] = name
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "runSuite" && len(n.Args) == 2 {
					if u, ok := n.Args[1].(*ast.UnaryExpr); ok {
						if cl, ok := u.X.(*ast.CompositeLit); ok {
							if tid, ok := cl.Type.(*ast.Ident); ok {
								run[tid.Name] = true
							}
						}
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "check" && n.Sel.Name == "Suite" {
					t.Errorf("%s: check.Suite registers a suite that nothing runs here; call runSuite from a func Test…Suite", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if len(suites) < 40 {
		t.Fatalf("found only %d suites: the parse no longer sees them", len(suites))
	}
	for s, file := range suites {
		if !run[s] {
			t.Errorf("%s (%s) has Test methods but no func Test%s calls runSuite with it", s, file, s)
		}
	}
}
