package graph

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

// A local image's files are listed, stat'ed and archived from its stored
// (uncompressed) layers, and the index is kept for the next request.
func TestImageFilesOfALocalImage(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	base := graphtest.Tar(t, graphtest.TarEntry{Name: "etc/", Typeflag: tar.TypeDir}, graphtest.TarEntry{Name: "etc/passwd", Body: "root:x:0:0\n"})
	upper := graphtest.Tar(t, graphtest.TarEntry{Name: "etc/hostname", Body: "box\n"}, graphtest.TarEntry{Name: "etc/pw", Typeflag: tar.TypeSymlink, Linkname: "passwd"})
	putCustomImage(t, s, store.ImageConfig{}, [][]byte{base, upper}, "docker.io/library/files:latest")

	var got []string
	err := s.ImageFiles(ctx, "files", types.FilesOptions{Path: "/etc"}, func(e types.FileEntry) error {
		got = append(got, e.Path+" "+e.Type+" "+e.Source)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[/etc/hostname file layer /etc/passwd file layer /etc/pw symlink layer]"; fmtList(got) != want {
		t.Fatalf("ls /etc: %s\nwant %s", fmtList(got), want)
	}
	st, err := s.ImageStat(ctx, "files", types.FilesOptions{Path: "/etc/pw"})
	if err != nil || st.Name != "pw" || st.LinkTarget != "/etc/passwd" {
		t.Fatalf("stat: %+v %v", st, err)
	}
	var out bytes.Buffer
	err = s.ImageArchive(ctx, "files", types.FilesOptions{Path: "/etc/passwd"}, func(container.PathStat) (io.Writer, error) { return &out, nil })
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&out)
	h, err := tr.Next()
	if err != nil || h.Name != "passwd" {
		t.Fatalf("archive: %+v %v", h, err)
	}
	if b, _ := io.ReadAll(tr); string(b) != "root:x:0:0\n" {
		t.Fatalf("archive body %q", b)
	}
	files, bytes, _ := s.LayerIndexUsage()
	if files != 2 {
		t.Fatalf("%d indexes kept, want 2", files)
	}
	if du, err := s.DiskUsage(ctx); err != nil || du.LayerIndexes != 2 || du.LayerIndexesSize != bytes {
		t.Fatalf("system df: %+v %v", du, err)
	}
	if err := s.ImageFiles(ctx, "nosuch", types.FilesOptions{}, func(types.FileEntry) error { return nil }); !errdefs.IsNotFound(err) {
		t.Fatalf("no such image: %v", err)
	}
}

func fmtList(s []string) string {
	var b bytes.Buffer
	b.WriteString("[")
	for i, x := range s {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(x)
	}
	b.WriteString("]")
	return b.String()
}
