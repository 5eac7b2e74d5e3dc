package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
)

func TestImportImage(t *testing.T) {
	s, ev := newLocalTestStore(t)
	ctx := context.Background()
	rootfs := graphtest.Tar(t, graphtest.TarEntry{Name: "/bin/", Typeflag: tar.TypeDir}, graphtest.TarEntry{Name: "/bin/sh", Body: "#!"},
		graphtest.TarEntry{Name: "bin/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
	for _, tc := range []struct {
		name string
		body []byte
	}{{"plain", rootfs}, {"gzip", graphtest.Gzip(t, rootfs)}} {
		t.Run(tc.name, func(t *testing.T) {
			var out graphtest.Messages
			err := s.ImportImage(ctx, bytes.NewReader(tc.body), types.ImportOptions{
				Repo: "127.0.0.1:5000/imported3:1.0", Changes: []string{`CMD ["/bin/sh"]`}, Message: "curl import",
				Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"},
			}, &out)
			if err != nil {
				t.Fatal(err)
			}
			msgs := out.All()
			if len(msgs) != 1 || !strings.HasPrefix(msgs[0].Status, "sha256:") || graphtest.JSONText(t, msgs[0]) != `{"status":"`+msgs[0].Status+`"}` {
				t.Fatalf("messages = %+v", msgs)
			}
			rec, got := imageConfig(t, s, "127.0.0.1:5000/imported3:1.0")
			if rec.ID.String() != msgs[0].Status || got.Architecture != "arm64" || got.Comment != "curl import" || got.Config.Cmd[0] != "/bin/sh" {
				t.Fatalf("image %s, config = %+v", rec.ID, got)
			}
			// DiffID is the sha256 of the uncompressed tar, whatever the input compression.
			if got.RootFS.DiffIDs[0] != digest.FromBytes(rootfs) {
				t.Fatalf("diff id = %s, want %s", got.RootFS.DiffIDs[0], digest.FromBytes(rootfs))
			}
		})
	}
	acts := strings.Join(ev.Actions(), ",")
	if acts != "tag,import,tag,import" {
		t.Fatalf("events = %s", acts)
	}
	if ev.Events()[1].Attrs["name"] != ev.Events()[1].Actor {
		t.Fatalf("import event = %+v", ev.Events()[1])
	}
}

func TestImportImageRejects(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	good := graphtest.Tar(t, graphtest.TarEntry{Name: "a", Body: "x"})
	tests := []struct {
		name string
		body []byte
		opts types.ImportOptions
	}{
		{"garbage", bytes.Repeat([]byte("garbage!"), 200), types.ImportOptions{}},
		{"short garbage", []byte("nope"), types.ImportOptions{}},
		{"empty", nil, types.ImportOptions{}},
		{"dotdot", graphtest.Tar(t, graphtest.TarEntry{Name: "../evil", Body: "x"}), types.ImportOptions{}},
		{"nested dotdot", graphtest.Tar(t, graphtest.TarEntry{Name: "a/../../evil", Body: "x"}), types.ImportOptions{}},
		{"hardlink dotdot", graphtest.Tar(t, graphtest.TarEntry{Name: "l", Typeflag: tar.TypeLink, Linkname: "../../etc/shadow"}), types.ImportOptions{}},
		{"bad gzip", []byte{0x1f, 0x8b, 1, 2, 3}, types.ImportOptions{}},
		{"bad repo", good, types.ImportOptions{Repo: "UPPER"}},
		{"bad change", good, types.ImportOptions{Changes: []string{"RUN x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ImportImage(ctx, bytes.NewReader(tt.body), tt.opts, types.DiscardProgress)
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("err = %v, want InvalidArgument", err)
			}
		})
	}
	if s.st.Count() != 0 {
		t.Fatalf("rejected imports left %d images", s.st.Count())
	}
}
