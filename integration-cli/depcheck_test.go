package integration

import (
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/wharfproject/wharf/internal/testregistry"
)

const module = "github.com/wharfproject/wharf"

// wharfDeps returns the wharf packages pkg depends on (transitively),
// excluding itself and internal/testregistry-style test helpers.
func wharfDeps(t *testing.T, root, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json", "./"+pkg)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var deps []string
	for dec.More() {
		var p struct{ ImportPath string }
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if strings.HasPrefix(p.ImportPath, module+"/") && p.ImportPath != module+"/"+pkg {
			deps = append(deps, strings.TrimPrefix(p.ImportPath, module+"/"))
		}
	}
	sort.Strings(deps)
	return deps
}

// TestDependencyBoundaries keeps the arrows of DESIGN.md pointing down.
func TestDependencyBoundaries(t *testing.T) {
	root, err := testregistry.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rules := []struct {
		pkg     string
		allowed []string // wharf packages pkg may depend on; nil = none
		denied  []string // prefixes pkg must not depend on (when allowed is "any")
		any     bool
	}{
		{pkg: "registry", allowed: []string{"imagespec", "registry/hosts", "registry/transport", "trust"}},
		// The HTTP stack knows the configuration, not the protocol.
		{pkg: "registry/transport", allowed: []string{"registry/hosts"}},
		// The configuration sends no request and knows no protocol.
		{pkg: "registry/hosts", allowed: nil},
		{pkg: "api/types", allowed: nil},
		{pkg: "api/server", any: true, denied: []string{"graph", "registry", "daemon"}},
		{pkg: "graph", any: true, denied: []string{"daemon", "api/server", "client", "cmd"}},
		// The store owns blob lifetime and knows nothing of registries,
		// archives or the API beyond the check's wire types.
		{pkg: "graph/store", allowed: []string{"api/types", "imagespec", "internal/atomicfile", "internal/ocilayout", "internal/rootlock", "internal/safetar"}},
		{pkg: "graph/archive", allowed: []string{"api/types", "imagespec", "graph/store", "internal/atomicfile", "internal/decompress", "internal/ocilayout", "internal/rootlock", "internal/safetar"}},
		{pkg: "graph/distribution", allowed: []string{"api/types", "imagespec", "graph/store", "internal/atomicfile", "internal/ocilayout", "internal/rootlock", "internal/safetar", "internal/semvertag", "registry", "registry/hosts", "registry/transport", "trust"}},
		// The mirror moves images on distribution's plan; nothing below
		// it knows of sync.
		{pkg: "graph/mirror", allowed: []string{"api/types", "imagespec", "graph/store", "graph/distribution", "internal/atomicfile", "internal/ocilayout", "internal/rootlock", "internal/safetar", "internal/semvertag", "registry", "registry/hosts", "registry/transport", "trust"}},
		{pkg: "graph/updates", allowed: []string{"api/types", "imagespec", "graph/store", "graph/distribution", "internal/atomicfile", "internal/ocilayout", "internal/rootlock", "internal/safetar", "internal/semvertag", "registry", "registry/hosts", "registry/transport", "trust"}},
		{pkg: "internal/atomicfile", allowed: nil},
		{pkg: "internal/safetar", allowed: nil},
		{pkg: "internal/semvertag", allowed: nil},
		// The layout codec knows tar and the image-spec, nothing of wharf.
		{pkg: "internal/ocilayout", allowed: []string{"internal/safetar"}},
		{pkg: "internal/decompress", allowed: nil},
		{pkg: "internal/rootlock", allowed: nil},
		{pkg: "imagespec", allowed: nil},
		{pkg: "client", allowed: []string{"api/types", "internal/privdir"}},
		// The metrics implement the observers of registry, graph and
		// api/server structurally: they import none of them.
		{pkg: "daemon/metrics", allowed: nil},
	}
	for _, r := range rules {
		t.Run(strings.ReplaceAll(r.pkg, "/", "_"), func(t *testing.T) {
			deps := wharfDeps(t, root, r.pkg)
			for _, d := range deps {
				if r.any {
					for _, bad := range r.denied {
						if d == bad || strings.HasPrefix(d, bad+"/") {
							t.Errorf("%s imports %s (forbidden: %v); all wharf deps: %v", r.pkg, d, r.denied, deps)
						}
					}
					continue
				}
				ok := false
				for _, a := range r.allowed {
					if d == a {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s imports %s; only %v allowed; all wharf deps: %v", r.pkg, d, r.allowed, deps)
				}
			}
		})
	}
}

// TestWharfDepsSeesImports guards the checker itself: cmd/wharf must be seen
// to depend on client, or the boundary test could pass vacuously.
func TestWharfDepsSeesImports(t *testing.T) {
	root, err := testregistry.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	deps := wharfDeps(t, root, "cmd/wharf")
	found := false
	for _, d := range deps {
		if d == "client" {
			found = true
		}
	}
	if !found {
		t.Fatalf("go list saw no dependency of cmd/wharf on client: %v", deps)
	}
}
