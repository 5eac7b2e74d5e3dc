package mirror

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/graph/distribution"
)

func TestTagFilter(t *testing.T) {
	h := digest.FromString("x").Encoded()
	tags := []string{"latest", "1.0.0", "1.1.0", "v1.2", "1.2.0-rc1", "2.0.0", "2.1.0-alpine", "3", "edge"}
	refTags := []string{"sha256-" + h, "sha256-" + h + ".sig", "sha256-" + h + ".att"}
	for _, tc := range []struct {
		name         string
		regex, rng   string
		only         []string
		latest       int
		refTags      bool
		want         []string
		wantErrClass bool
	}{
		{name: "all", want: tags},
		{name: "regex unanchored", regex: `\.0\.`, want: []string{"1.0.0", "2.0.0"}},
		{name: "regex anchored", regex: `^1\.`, want: []string{"1.0.0", "1.1.0", "1.2.0-rc1"}},
		{name: "semver range", rng: ">= 1.1, < 2", want: []string{"1.1.0", "v1.2"}},
		{name: "semver caret", rng: "^2", want: []string{"2.0.0"}},
		{name: "semver prerelease asked", rng: ">= 1.2.0-0, < 1.3", want: []string{"v1.2", "1.2.0-rc1"}},
		{name: "semver or", rng: "1.0.x || >= 3", want: []string{"1.0.0", "3"}},
		{name: "regex and semver", regex: `^v`, rng: ">= 1", want: []string{"v1.2"}},
		{name: "latest 2", latest: 2, want: []string{"2.1.0-alpine", "3"}}, // a suffix is a prerelease of 2.1.0, above 2.0.0
		{name: "latest after range", rng: "< 2", latest: 2, want: []string{"1.1.0", "v1.2"}},
		{name: "latest more than there are", regex: "^l", latest: 5, want: []string{"latest"}},
		{name: "only", only: []string{"edge", "1.0.0", "missing"}, want: []string{"1.0.0", "edge"}},
		{name: "bad regex", regex: "(", wantErrClass: true},
		{name: "referrer tags", refTags: true, regex: "^(sha|1.0)", want: []string{"1.0.0"}},
		{name: "bad range", rng: "~> one", wantErrClass: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f tagFilter
			err := f.add(tc.regex, tc.rng)
			if tc.wantErrClass {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("err = %v, want InvalidArgument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f.latest, f.noReferrerTags = tc.latest, tc.refTags
			if tc.only != nil {
				f.only = map[string]bool{}
				for _, o := range tc.only {
					f.only[o] = true
				}
			}
			in := tags
			if tc.refTags {
				in = append(slices.Clone(tags), refTags...)
			}
			if got := f.apply(in); !slices.Equal(got, tc.want) {
				t.Fatalf("apply = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSyncDestinationName(t *testing.T) {
	for _, tc := range []struct {
		dst, src string
		scoped   bool
		want     string
		bad      bool
	}{
		{dst: "mirror.example:5000", src: "registry.example.com/team/app", want: "mirror.example:5000/app"},
		{dst: "mirror.example:5000/m", src: "registry.example.com/team/app", want: "mirror.example:5000/m/app"},
		{dst: "mirror.example:5000/m", src: "registry.example.com/team/app", scoped: true, want: "mirror.example:5000/m/registry.example.com/team/app"},
		{dst: "localhost/m", src: "127.0.0.1:5001/a/b", scoped: true, want: "localhost/m/127.0.0.1_5001/a/b"},
		{dst: "mirror.example/m", src: "alpine", scoped: true, want: "mirror.example/m/docker.io/library/alpine"},
		{dst: "mirror.example/m", src: "alpine", want: "mirror.example/m/alpine"},
		{dst: "justapath", bad: true},
		{dst: "host.example/Bad", bad: true},
		{dst: "", bad: true},
	} {
		t.Run(tc.dst+"<-"+tc.src, func(t *testing.T) {
			host, p, err := splitSyncDestination(tc.dst)
			if tc.bad {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("err = %v, want InvalidArgument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			src, err := reference.ParseNormalizedNamed(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := syncDestinationName(host, p, src, tc.scoped)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBackupTemplate(t *testing.T) {
	d := digest.FromString("old")
	for _, tc := range []struct {
		tmpl, want string
		bad        bool
	}{
		{tmpl: "{{.Tag}}-backup-{{.Digest.Short}}", want: "1.2-backup-" + d.Encoded()[:12]},
		{tmpl: "{{.Tag}}-{{.Digest.Algorithm}}-{{.Digest.Hex}}", want: "1.2-sha256-" + d.Encoded()},
		{tmpl: "old", want: "old"},
		{tmpl: "{{.Digest}}", bad: true},             // a colon
		{tmpl: "{{.Nope}}", bad: true},               // no such field
		{tmpl: "{{.Tag", bad: true},                  // does not parse
		{tmpl: "{{printf \"%0200d\" 1}}", bad: true}, // longer than a tag
	} {
		t.Run(tc.tmpl, func(t *testing.T) {
			bt, err := parseBackupTemplate(tc.tmpl)
			if tc.bad {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("err = %v, want InvalidArgument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n, _ := reference.ParseNormalizedNamed("example.com/a")
			got, err := bt.render(syncItem{dstName: n, tag: "1.2"}, d)
			if err != nil || got != tc.want {
				t.Fatalf("render = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if bt, err := parseBackupTemplate(""); bt != nil || err != nil {
		t.Fatalf("empty template: %v, %v", bt, err)
	}
}

func TestErrorClass(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", errdefs.ErrNotFound), "not-found"},
		{fmt.Errorf("x%.0w%.0w", distribution.ErrDenied, errdefs.ErrUnauthenticated), "denied"},
		{fmt.Errorf("x%.0w", distribution.ErrUnauthorized), "unknown"}, // the sentinel alone carries no errdefs class
		{fmt.Errorf("x%.0w", errdefs.ErrUnauthenticated), "unauthorized"},
		{fmt.Errorf("x%.0w", distribution.ErrUpstream), "upstream"},
		{fmt.Errorf("x%.0w%.0w", distribution.ErrDigestMismatch, distribution.ErrUpstream), "digest-mismatch"},
		{fmt.Errorf("x%.0w", errdefs.ErrUnavailable), "unavailable"},
		{fmt.Errorf("x%.0w", errdefs.ErrNotImplemented), "not-implemented"},
		{fmt.Errorf("x%.0w", errdefs.ErrInvalidArgument), "invalid-argument"},
		{errors.New("plain"), "unknown"},
	} {
		if got := ErrorClass(tc.err); got != tc.want {
			t.Errorf("ErrorClass(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
