package packages

import (
	"runtime/debug"
	"testing"
)

func TestGoPackagesAsSyft(t *testing.T) {
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want map[string]string // name → version purl
	}{{
		name: "replace by a module, replace by a directory",
		info: debug.BuildInfo{GoVersion: "go1.22.4", Path: "example.com/app/cmd/app",
			Main: debug.Module{Path: "example.com/app", Version: "v1.2.3"},
			Deps: []*debug.Module{
				{Path: "golang.org/x/sys", Version: "v0.1.0", Replace: &debug.Module{Path: "example.com/fork/sys", Version: "v0.1.1"}},
				{Path: "example.com/local", Version: "v0.0.0", Replace: &debug.Module{Path: "../local", Version: "(devel)"}},
			}},
		want: map[string]string{
			"example.com/app":      "v1.2.3 pkg:golang/example.com/app@v1.2.3",
			"example.com/fork/sys": "v0.1.1 pkg:golang/example.com/fork/sys@v0.1.1",
			"example.com/local":    " pkg:golang/example.com/local",
			"stdlib":               "go1.22.4 pkg:golang/stdlib@1.22.4",
		},
	}, {
		name: "devel main, version from -ldflags",
		info: debug.BuildInfo{GoVersion: "go1.26.8 X:nocoverageredesign", Path: "example.com/app",
			Main:     debug.Module{Path: "example.com/app", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-X main.version=1.4.0 -X main.commit=abc"}}},
		want: map[string]string{
			"example.com/app": "v1.4.0 pkg:golang/example.com/app@v1.4.0",
			"stdlib":          "go1.26.8 pkg:golang/stdlib@1.26.8",
		},
	}, {
		name: "devel main, pseudo-version from VCS",
		info: debug.BuildInfo{GoVersion: "go1.26.8", Path: "example.com/app",
			Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"},
				{Key: "vcs.time", Value: "2024-05-01T10:00:00Z"}}},
		want: map[string]string{
			"example.com/app": "v0.0.0-20240501100000-0123456789ab pkg:golang/example.com/app@v0.0.0-20240501100000-0123456789ab",
			"stdlib":          "go1.26.8 pkg:golang/stdlib@1.26.8",
		},
	}, {
		name: "built from files: the one devel dependency is the main module",
		info: debug.BuildInfo{GoVersion: "devel +abc", Path: "command-line-arguments",
			Main: debug.Module{Path: "command-line-arguments"},
			Deps: []*debug.Module{{Path: "example.com/app", Version: "(devel)"}, {Path: "example.com/lib", Version: "v1.0.0"}}},
		want: map[string]string{
			"example.com/app": " pkg:golang/example.com/app",
			"example.com/lib": "v1.0.0 pkg:golang/example.com/lib@v1.0.0",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			info := tc.info
			got := map[string]string{}
			for _, p := range goPackages(&info, "/app") {
				got[p.Name] = p.Version + " " + p.PURL
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v", got)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: got %q want %q", k, got[k], v)
				}
			}
		})
	}
}
