package graph

import (
	"archive/tar"
	"context"
	"reflect"
	"testing"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

func labelled(labels map[string]string, env ...string) store.ImageConfig {
	var cfg store.ImageConfig
	cfg.Config = dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Labels: labels, Env: env}}
	return cfg
}

const statusOf = "Package: libfoo1\nStatus: install ok installed\nArchitecture: amd64\nVersion: "

// Two local versions that share a base: each section as the daemon
// answers it, the runtime config compared (docker's config type shadows
// the OCI one), and a self-diff empty.
func TestImageDiffOfTwoLocalVersions(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	base := graphtest.Tar(t, graphtest.TarEntry{Name: "etc/", Typeflag: tar.TypeDir}, graphtest.TarEntry{Name: "etc/passwd", Body: "root:x:0:0\n"})
	top := func(v, conf string) []byte {
		return graphtest.Tar(t, graphtest.TarEntry{Name: "etc/app.conf", Body: conf},
			graphtest.TarEntry{Name: "var/lib/dpkg/status", Body: statusOf + v + "\n"})
	}
	src := "https://github.com/o/app"
	putCustomImage(t, s, labelled(map[string]string{"org.opencontainers.image.source": src, "org.opencontainers.image.revision": "a1"}, "V=1"), [][]byte{base, top("1.0", "one")}, "docker.io/library/app:1")
	putCustomImage(t, s, labelled(map[string]string{"org.opencontainers.image.source": src, "org.opencontainers.image.revision": "b2"}, "V=2"), [][]byte{base, top("1.1", "two")}, "docker.io/library/app:2")

	d, err := s.ImageDiff(ctx, types.DiffRequest{From: types.DiffSide{Kind: "local", Name: "app:1"}, To: types.DiffSide{Kind: "local", Name: "app:2"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Errors) != 0 {
		t.Fatalf("errors %v", d.Errors)
	}
	wantConfig := []types.Changed{{Field: "Env[V]", From: "1", To: "2"}, {Field: "Labels[org.opencontainers.image.revision]", From: "a1", To: "b2"}}
	if !reflect.DeepEqual(d.Config.Changes, wantConfig) {
		t.Errorf("config %+v", d.Config.Changes)
	}
	var paths []string
	for _, c := range d.Files.Changes {
		paths = append(paths, c.Change+" "+c.Path)
	}
	want := []string{"changed /etc/app.conf", "changed /var/lib/dpkg/status"}
	if !reflect.DeepEqual(paths, want) || d.Files.SharedCompared {
		t.Errorf("files %v (shared compared %v: the base was never indexed)", paths, d.Files.SharedCompared)
	}
	if len(d.Packages.Upgraded) != 1 || d.Packages.Upgraded[0].Name != "libfoo1" || d.Packages.Upgraded[0].To != "1.1" {
		t.Errorf("packages %+v", d.Packages)
	}
	if len(d.Layers.Shared) != 1 || len(d.Layers.Added) != 1 || d.Pull.Bytes != 0 || d.Pull.Present != 2 {
		t.Errorf("layers %+v pull %+v", d.Layers, d.Pull)
	}
	if d.Source.CompareURL != src+"/compare/a1...b2" || !d.Differs() {
		t.Errorf("source %+v", d.Source)
	}

	// The packages section read the base of neither; an ls of one
	// version indexes it, and the files section then compares the whole
	// views, with the same answer.
	if err := s.ImageFiles(ctx, "app:1", types.FilesOptions{Path: "/"}, func(types.FileEntry) error { return nil }); err != nil {
		t.Fatal(err)
	}
	d, err = s.ImageDiff(ctx, types.DiffRequest{From: types.DiffSide{Kind: "local", Name: "app:1"}, To: types.DiffSide{Kind: "local", Name: "app:2"}, Sections: []string{"files"}})
	if err != nil || !d.Files.SharedCompared || len(d.Files.Changes) != 2 {
		t.Fatalf("files over the indexed base: %+v %v", d.Files, err)
	}

	self, err := s.ImageDiff(ctx, types.DiffRequest{From: types.DiffSide{Kind: "local", Name: "app:1"}, To: types.DiffSide{Kind: "local", Name: "app:1"}})
	if err != nil || self.Differs() || len(self.Files.Changes) != 0 || self.Files.LayersIndexed != 0 {
		t.Fatalf("self-diff %+v %v", self, err)
	}
}

func TestImageDiffSectionsAndSides(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	putCustomImage(t, s, labelled(nil), [][]byte{graphtest.Tar(t, graphtest.TarEntry{Name: "a", Body: "a"})}, "docker.io/library/one:1")
	side := types.DiffSide{Kind: "local", Name: "one:1"}
	d, err := s.ImageDiff(ctx, types.DiffRequest{From: side, To: side, Sections: []string{"source", "config"}})
	if err != nil || d.Config == nil || d.Source == nil || d.Files != nil || d.Layers != nil || d.Pull != nil || d.Packages != nil || d.Signer != nil {
		t.Fatalf("sections config,source: %+v %v", d, err)
	}
	for _, tc := range []struct {
		req   types.DiffRequest
		class func(error) bool
	}{
		{types.DiffRequest{From: side, To: side, Sections: []string{"nope"}}, errdefs.IsInvalidArgument},
		{types.DiffRequest{From: side, To: types.DiffSide{Kind: "local", Name: "missing:1"}}, errdefs.IsNotFound},
		{types.DiffRequest{From: side, To: types.DiffSide{Kind: "archive", Name: "relative.tar"}}, errdefs.IsInvalidArgument},
		{types.DiffRequest{From: side, To: types.DiffSide{Kind: "elsewhere", Name: "x"}}, errdefs.IsInvalidArgument},
	} {
		if _, err := s.ImageDiff(ctx, tc.req); !tc.class(err) {
			t.Errorf("%+v: %v", tc.req, err)
		}
	}
}
