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
	parseGoFiles(t, root, "_test.go", func(f *ast.File) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !(strings.HasPrefix(fn.Name.Name, "Test") || strings.HasPrefix(fn.Name.Name, "Fuzz")) {
				continue
			}
			out["."+fn.Name.Name] = true
			if recv := recvName(fn); recv != "" {
				out[recv+"."+fn.Name.Name] = true
			}
		}
	})
	return out
}

// parseGoFiles calls fn with every Go file under root whose name ends in
// suffix, outside .git, .cache, bin and testdata.
func parseGoFiles(t *testing.T, root, suffix string, fn func(*ast.File)) {
	t.Helper()
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
		if !strings.HasSuffix(path, suffix) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// recvName is the name of fn's receiver type (T for T, *T and T[P]), ""
// for a plain function.
func recvName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) != 1 {
		return ""
	}
	typ := fn.Recv.List[0].Type
	if st, ok := typ.(*ast.StarExpr); ok {
		typ = st.X
	}
	if ix, ok := typ.(*ast.IndexExpr); ok {
		typ = ix.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// The names docs/architecture.md and docs/performance.md write in
// backticks: a file path (`graph/store/partial.go`), a Go name qualified
// by its package or type (`store.Lease`, `Repository.HeadTag`,
// `distribution.Service.PullImage`), a call (`Name()`), or a test or
// benchmark (`TestX`, `BenchmarkX`). Fenced code blocks are drawings, not
// names, and are skipped.
var (
	docSpan     = regexp.MustCompile("`([^`\n]+)`")
	docFence    = regexp.MustCompile("(?ms)^```.*?^```")
	docFilePath = regexp.MustCompile(`^[a-z][a-z0-9_-]*(/[A-Za-z0-9_.-]+)+\.(go|md|sh|json|toml|yaml)$`)
	docGoName   = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9]*)(?:\.([A-Z][A-Za-z0-9]*))?(?:\(\))?$`)
	docCall     = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\(\)$`)
	docTestName = regexp.MustCompile(`^(Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*$`)
)

// docOtherPackages are the packages outside the module the documents
// name a function of; any other lower-case qualifier must be a wharf
// package.
var docOtherPackages = map[string]bool{"json": true, "http": true, "os": true, "reference": true, "platforms": true, "errdefs": true}

// TestDocsNameOnlyWhatExists: every file and Go name the architecture map
// and the performance figures name exists in the tree, so a renamed file,
// type or function fails here rather than leaving the map wrong.
func TestDocsNameOnlyWhatExists(t *testing.T) {
	root, err := testregistry.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	idx := indexGoNames(t, root)
	for _, doc := range []string{"docs/architecture.md", "docs/performance.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := docFence.ReplaceAllString(string(b), "")
		checked := 0
		for _, m := range docSpan.FindAllStringSubmatch(text, -1) {
			span := m[1]
			switch {
			case docFilePath.MatchString(span):
				checked++
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(span))); err != nil {
					t.Errorf("%s names %s, which does not exist", doc, span)
				}
			case docTestName.MatchString(span):
				checked++
				if !idx.funcs[span] {
					t.Errorf("%s names %s, which no file declares", doc, span)
				}
			case docCall.MatchString(span):
				checked++
				if name := docCall.FindStringSubmatch(span)[1]; !idx.funcs[name] {
					t.Errorf("%s names %s, which no file declares", doc, span)
				}
			case docGoName.MatchString(span):
				checked++
				if !idx.has(docGoName.FindStringSubmatch(span)) {
					t.Errorf("%s names %s, which no package or type declares", doc, span)
				}
			}
		}
		if checked < 20 {
			t.Errorf("%s: only %d names checked: the patterns no longer match how it writes them", doc, checked)
		}
	}
}

// goNames indexes the module's declarations: top-level names per package
// name, members (methods and struct fields) per type name, and every
// function and method name.
type goNames struct {
	pkgs    map[string]map[string]bool // package name → top-level names and its types' methods
	members map[string]map[string]bool // type name → methods and fields
	funcs   map[string]bool
}

// has reports whether m (docGoName's groups: qualifier, name, member)
// names a declaration: pkg.Name, Type.Member or pkg.Type.Member.
func (g goNames) has(m []string) bool {
	q, name, member := m[1], m[2], m[3]
	if member != "" {
		return g.pkgs[q][name] && g.members[name][member]
	}
	if q[0] >= 'A' && q[0] <= 'Z' {
		return g.members[q][name]
	}
	if g.pkgs[q] == nil {
		return docOtherPackages[q]
	}
	return g.pkgs[q][name]
}

func indexGoNames(t *testing.T, root string) goNames {
	t.Helper()
	g := goNames{pkgs: map[string]map[string]bool{}, members: map[string]map[string]bool{}, funcs: map[string]bool{}}
	add := func(m map[string]map[string]bool, k, v string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][v] = true
	}
	parseGoFiles(t, root, ".go", func(f *ast.File) {
		pkg := f.Name.Name
		if g.pkgs[pkg] == nil {
			g.pkgs[pkg] = map[string]bool{}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				g.funcs[d.Name.Name] = true
				if d.Recv == nil || len(d.Recv.List) != 1 {
					g.pkgs[pkg][d.Name.Name] = true
					continue
				}
				if recv := recvName(d); recv != "" {
					add(g.members, recv, d.Name.Name)
					g.pkgs[pkg][d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						g.pkgs[pkg][s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								for _, n := range fld.Names {
									add(g.members, s.Name.Name, n.Name)
								}
								if len(fld.Names) == 0 { // embedded: its type's name is the field's
									typ := fld.Type
									if st, ok := typ.(*ast.StarExpr); ok {
										typ = st.X
									}
									if sel, ok := typ.(*ast.SelectorExpr); ok {
										add(g.members, s.Name.Name, sel.Sel.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							g.pkgs[pkg][n.Name] = true
						}
					}
				}
			}
		}
	})
	return g
}
