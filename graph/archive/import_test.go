package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

func TestImportImage(t *testing.T) {
	s, ev := newLocalTestStore(t)
	ctx := context.Background()
	rootfs := makeTestTar(t, testTarEntry{name: "/bin/", typeflag: tar.TypeDir}, testTarEntry{name: "/bin/sh", body: "#!"},
		testTarEntry{name: "bin/link", typeflag: tar.TypeSymlink, linkname: "/etc/passwd"})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(rootfs)
	zw.Close()
	for _, tc := range []struct {
		name string
		body []byte
	}{{"plain", rootfs}, {"gzip", gz.Bytes()}} {
		t.Run(tc.name, func(t *testing.T) {
			var msgs []jsonstream.Message
			out := types.ProgressFunc(func(m jsonstream.Message) error { msgs = append(msgs, m); return nil })
			err := s.ImportImage(ctx, bytes.NewReader(tc.body), types.ImportOptions{
				Repo: "127.0.0.1:5000/imported3:1.0", Changes: []string{`CMD ["/bin/sh"]`}, Message: "curl import",
				Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"},
			}, out)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != 1 || !strings.HasPrefix(msgs[0].Status, "sha256:") || mustJSONText(t, msgs[0]) != `{"status":"`+msgs[0].Status+`"}` {
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
	acts := strings.Join(ev.actions(), ",")
	if acts != "tag,import,tag,import" {
		t.Fatalf("events = %s", acts)
	}
	if ev.evs[1].Attrs["name"] != ev.evs[1].Actor {
		t.Fatalf("import event = %+v", ev.evs[1])
	}
}

func TestImportImageRejects(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	good := makeTestTar(t, testTarEntry{name: "a", body: "x"})
	tests := []struct {
		name string
		body []byte
		opts types.ImportOptions
	}{
		{"garbage", bytes.Repeat([]byte("garbage!"), 200), types.ImportOptions{}},
		{"short garbage", []byte("nope"), types.ImportOptions{}},
		{"empty", nil, types.ImportOptions{}},
		{"dotdot", makeTestTar(t, testTarEntry{name: "../evil", body: "x"}), types.ImportOptions{}},
		{"nested dotdot", makeTestTar(t, testTarEntry{name: "a/../../evil", body: "x"}), types.ImportOptions{}},
		{"hardlink dotdot", makeTestTar(t, testTarEntry{name: "l", typeflag: tar.TypeLink, linkname: "../../etc/shadow"}), types.ImportOptions{}},
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
