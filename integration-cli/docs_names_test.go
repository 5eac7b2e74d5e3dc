package integration

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// docNamedTest is how docs/security.md names a test: Suite.TestName (a
// check.v1 suite's method), or a plain TestName / FuzzName.
var docNamedTest = regexp.MustCompile(`\b(?:([A-Z][A-Za-z0-9]*Suite)\.)?((?:Test|Fuzz)[A-Z][A-Za-z0-9_]*)\b`)

// TestSecurityDocNamesOnlyTestsThatExist: every test and fuzz target the
// security document names as a defence's proof is declared in a _test.go
// file of the module, a suite's test as a method of that suite, so the
// table of attacks cannot point at a test that was renamed or never
// written.
func TestSecurityDocNamesOnlyTestsThatExist(t *testing.T) {
	root, err := testregistry.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	declared := declaredTests(t, root)
	named := 0
	for _, m := range docNamedTest.FindAllStringSubmatch(string(doc), -1) {
		named++
		suite, name := m[1], m[2]
		if !declared[suite+"."+name] {
			if suite == "" {
				t.Errorf("docs/security.md names %s, which no _test.go file declares", name)
			} else {
				t.Errorf("docs/security.md names %s.%s, which is not a method of %s", suite, name, suite)
			}
		}
	}
	if named < 50 {
		t.Fatalf("found only %d test names in docs/security.md: the pattern no longer matches how it names them", named)
	}
}

// declaredTests are the module's Test and Fuzz functions and suite
// methods, each as ".Name" (how the document names a plain test, or a
// suite's without its suite) and suite methods also as "Suite.Name", from
// every _test.go file outside testdata.
func declaredTests(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			switch e.Name() {
			case ".git", ".cache", "bin", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !(strings.HasPrefix(fn.Name.Name, "Test") || strings.HasPrefix(fn.Name.Name, "Fuzz")) {
				continue
			}
			recv := ""
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				typ := fn.Recv.List[0].Type
				if st, ok := typ.(*ast.StarExpr); ok {
					typ = st.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					recv = id.Name
				}
			}
			out["."+fn.Name.Name] = true
			if recv != "" {
				out[recv+"."+fn.Name.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
