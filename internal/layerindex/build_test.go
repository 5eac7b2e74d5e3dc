package layerindex

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// TestBuildAgreesWithArchiveTar writes every entry type in every tar
// format with archive/tar, and checks each index entry against what
// archive/tar reads back, both from the stream and from the entry's own
// HeaderOffset.
func TestBuildAgreesWithArchiveTar(t *testing.T) {
	long := strings.Repeat("long-directory-name/", 12) + "file" // 244 bytes: no ustar
	sub := time.Date(2024, 2, 3, 4, 5, 6, 789, time.UTC)
	hdrs := []*tar.Header{
		{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "./bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "./bin/su", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 5},
		{Name: "bin/sgid", Typeflag: tar.TypeReg, Mode: 0o2755, Size: 1},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: "bin/sh", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777},
		{Name: "bin/ln", Typeflag: tar.TypeLink, Linkname: "./bin/su"},
		{Name: "dev/null", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3},
		{Name: "dev/sda", Typeflag: tar.TypeBlock, Mode: 0o660, Devmajor: 8, Devminor: 0},
		{Name: "run/fifo", Typeflag: tar.TypeFifo, Mode: 0o600},
		{Name: "pax/" + long, Typeflag: tar.TypeReg, Mode: 0o644, Size: 3, Format: tar.FormatPAX, ModTime: sub},
		{Name: "gnu/" + long, Typeflag: tar.TypeReg, Mode: 0o644, Size: 3, Format: tar.FormatGNU},
		{Name: "gnu/link", Typeflag: tar.TypeSymlink, Linkname: "/" + long, Format: tar.FormatGNU},
		{Name: "bigid", Typeflag: tar.TypeReg, Mode: 0o600, Uid: 1 << 30, Gid: 1 << 25, Size: 2, Format: tar.FormatPAX,
			PAXRecords: map[string]string{"SCHILY.xattr.user.k": "v"}},
		{Name: "empty", Typeflag: tar.TypeReg, Mode: 0o644},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "global"}}); err != nil {
		t.Fatal(err)
	}
	for _, h := range hdrs {
		if h.ModTime.IsZero() {
			h.ModTime = testTime
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		tw.Write(bytes.Repeat([]byte{'x'}, int(h.Size)))
	}
	tw.Close()
	buf.Write(make([]byte, 1024)) // trailing bytes after the end: in the DiffID too
	raw := buf.Bytes()

	ix, err := Build(context.Background(), bytes.NewReader(raw), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if ix.DiffID != digest.FromBytes(raw) || ix.TarSize != int64(len(raw)) || ix.Source != SourceLayer {
		t.Fatalf("DiffID %s size %d source %v; want %s %d layer", ix.DiffID, ix.TarSize, ix.Source, digest.FromBytes(raw), len(raw))
	}
	if len(ix.Entries) != len(hdrs) {
		t.Fatalf("%d entries, want %d (the global header is no entry)", len(ix.Entries), len(hdrs))
	}
	wantType := map[byte]Type{tar.TypeReg: TypeFile, tar.TypeDir: TypeDir, tar.TypeSymlink: TypeSymlink, tar.TypeLink: TypeHardlink,
		tar.TypeChar: TypeChar, tar.TypeBlock: TypeBlock, tar.TypeFifo: TypeFIFO}
	for i, e := range ix.Entries {
		// archive/tar's own reading of the entry, from its offset.
		tr := tar.NewReader(bytes.NewReader(raw[e.HeaderOffset:]))
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no header at offset %d: %v", e.Path, e.HeaderOffset, err)
		}
		data, _ := io.ReadAll(tr)
		wantPath, _ := cleanName(h.Name)
		if e.Path != wantPath || e.Type != wantType[h.Typeflag] || e.Mode != h.FileInfo().Mode() ||
			e.UID != int64(h.Uid) || e.GID != int64(h.Gid) || !e.ModTime.Equal(h.ModTime) {
			t.Errorf("entry %d: %+v\n  archive/tar: %+v", i, e, h)
		}
		if h.Name != hdrs[i].Name && strings.TrimPrefix(h.Name, "./") != strings.TrimPrefix(hdrs[i].Name, "./") {
			t.Errorf("entry %d: header at offset is %q, want %q", i, h.Name, hdrs[i].Name)
		}
		switch e.Type {
		case TypeFile:
			if e.Size != h.Size || !e.HasDigest || e.SHA256 != sha256.Sum256(data) ||
				!bytes.Equal(raw[e.DataOffset:e.DataOffset+e.Size], data) {
				t.Errorf("%s: size %d digest %v data at %d; archive/tar read %d bytes", e.Path, e.Size, e.HasDigest, e.DataOffset, len(data))
			}
		case TypeSymlink:
			if e.Linkname != h.Linkname || e.Size != int64(len(h.Linkname)) {
				t.Errorf("%s: link %q size %d", e.Path, e.Linkname, e.Size)
			}
		case TypeHardlink:
			if e.Linkname != "/bin/su" {
				t.Errorf("%s: hardlink target %q, want /bin/su", e.Path, e.Linkname)
			}
		case TypeChar, TypeBlock:
			if e.Devmajor != h.Devmajor || e.Devminor != h.Devminor {
				t.Errorf("%s: device %d,%d", e.Path, e.Devmajor, e.Devminor)
			}
		}
		if e.Type != TypeFile && e.HasDigest {
			t.Errorf("%s: a %s has a digest", e.Path, e.Type)
		}
	}
	for p, mode := range map[string]fs.FileMode{"/bin/su": fs.ModeSetuid | 0o755, "/bin/sgid": fs.ModeSetgid | 0o755, "/tmp": fs.ModeDir | fs.ModeSticky | 0o777} {
		if e := find(ix, p); e == nil || e.Mode != mode {
			t.Errorf("%s: mode %v, want %v", p, e, mode)
		}
	}
	if e := find(ix, "/pax/"+long); e == nil || e.ModTime.Nanosecond() != 789 {
		t.Errorf("PAX sub-second mtime lost: %+v", e)
	}
}

func find(ix *Index, p string) *Entry {
	for i := range ix.Entries {
		if ix.Entries[i].Path == p {
			return &ix.Entries[i]
		}
	}
	return nil
}

// A sparse file is kept with its logical size and the digest of its
// expanded bytes; re-reading from its HeaderOffset expands it again.
func TestBuildKeepsSparseFiles(t *testing.T) {
	const size = 1 << 20
	var buf bytes.Buffer
	buf.Write(tarOf(t, file("before", "b"))[:1024]) // one entry, no end blocks
	buf.Write(testregistry.SparseTarEntry("holes", size, []byte("tail")))
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(header(file("after", "a")))
	tw.Write([]byte("a"))
	tw.Close()
	raw := buf.Bytes()

	ix, err := Build(context.Background(), bytes.NewReader(raw), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	e := find(ix, "/holes")
	if e == nil || !e.Sparse || e.Type != TypeFile || e.Size != size {
		t.Fatalf("sparse entry: %+v", e)
	}
	want := append(make([]byte, size-4), "tail"...)
	if e.SHA256 != sha256.Sum256(want) {
		t.Fatal("sparse digest is not the expanded content's")
	}
	tr := tar.NewReader(bytes.NewReader(raw[e.HeaderOffset:]))
	if h, err := tr.Next(); err != nil || h.Size != size {
		t.Fatalf("re-read header: %+v %v", h, err)
	}
	if got, _ := io.ReadAll(tr); !bytes.Equal(got, want) {
		t.Fatal("re-read from HeaderOffset does not expand to the file")
	}
	if a := find(ix, "/after"); a == nil || !bytes.Equal(raw[a.DataOffset:a.DataOffset+1], []byte("a")) {
		t.Fatalf("the entry after the sparse one is misplaced: %+v", a)
	}
	_, err = Build(context.Background(), bytes.NewReader(raw), Limits{MaxSparseBytes: size - 1})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("sparse cap: %v", err)
	}
}

func TestBuildCleansAndRefusesNames(t *testing.T) {
	ok := map[string]string{"./a": "/a", "/a": "/a", "a//b": "/a/b", "a/./b/../c": "/a/c", ".": "/", "..a": "/..a"}
	for name, want := range ok {
		l := buildLayer(t, tarOf(t, file(name, "")))
		if got := l.ix.Entries[0].Path; got != want {
			t.Errorf("%q → %q, want %q", name, got, want)
		}
	}
	for _, ents := range [][]tf{
		{file("../x", "")},
		{file("a/../../x", "")},
		{file("/../etc/passwd", "")},
		{file("..", "")},
		{hardlink("h", "../../etc/shadow")},
	} {
		_, err := Build(context.Background(), bytes.NewReader(tarOf(t, ents...)), Limits{})
		if !errors.Is(err, ErrTraversal) || !errdefs.IsInvalidArgument(err) {
			t.Errorf("%+v: err = %v, want ErrTraversal", ents[0], err)
		}
	}
}

func TestBuildLimits(t *testing.T) {
	raw := tarOf(t, file("a", "1"), file("b", "2"), symlink("c", strings.Repeat("x", 100)))
	cases := []struct {
		name string
		lim  Limits
	}{
		{"entries", Limits{MaxEntries: 2}},
		{"path length", Limits{MaxPathLen: 50}},
		{"index bytes", Limits{MaxIndexBytes: 2 * entryOverhead}},
	}
	for _, tc := range cases {
		_, err := Build(context.Background(), bytes.NewReader(raw), tc.lim)
		if !errors.Is(err, ErrLimit) || !errdefs.IsResourceExhausted(err) {
			t.Errorf("%s: err = %v, want ErrLimit", tc.name, err)
		}
	}
	if _, err := Build(context.Background(), bytes.NewReader(raw), Limits{MaxEntries: 3, MaxPathLen: 100}); err != nil {
		t.Errorf("at the limits: %v", err)
	}
}

func TestBuildErrors(t *testing.T) {
	raw := tarOf(t, file("a", strings.Repeat("x", 2000)))
	_, err := Build(context.Background(), bytes.NewReader(raw[:1500]), Limits{})
	if !errors.Is(err, ErrInvalidTar) || !errdefs.IsInvalidArgument(err) {
		t.Errorf("truncated: %v", err)
	}
	bad := append([]byte(nil), raw...)
	bad[148] ^= 0xff // the header checksum
	if _, err := Build(context.Background(), bytes.NewReader(bad), Limits{}); !errors.Is(err, ErrInvalidTar) {
		t.Errorf("bad checksum: %v", err)
	}
	vol := tarOf(t, tf{name: "label", typ: 'V'})
	if _, err := Build(context.Background(), bytes.NewReader(vol), Limits{}); !errors.Is(err, ErrInvalidTar) {
		t.Errorf("volume label: %v", err)
	}
	// A reader's own error keeps its class: it is not the layer's fault.
	boom := errdefs.ErrUnavailable
	_, err = Build(context.Background(), io.MultiReader(bytes.NewReader(raw[:700]), errReader{boom}), Limits{})
	if !errors.Is(err, boom) || errors.Is(err, ErrInvalidTar) {
		t.Errorf("reader error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, bytes.NewReader(raw), Limits{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	ix, err := Build(context.Background(), bytes.NewReader(nil), Limits{})
	if err != nil || len(ix.Entries) != 0 || ix.DiffID != digest.FromBytes(nil) {
		t.Errorf("empty stream: %+v %v", ix, err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// The type flag decides an entry's type bits; the header's mode field may
// claim another type (c_ISDIR on a symlink), and only its permission bits
// are kept.
func TestBuildTypeBitsFollowTheTypeFlag(t *testing.T) {
	raw := tarOf(t,
		tf{name: "l", typ: tar.TypeSymlink, link: "x", mode: 0o40777},
		tf{name: "f", typ: tar.TypeReg, mode: 0o20644},
		tf{name: "d", typ: tar.TypeDir, mode: 0o104755},
	)
	ix := buildLayer(t, raw).ix
	want := []fs.FileMode{fs.ModeSymlink | 0o777, 0o644, fs.ModeDir | fs.ModeSetuid | 0o755}
	for i, e := range ix.Entries {
		if e.Mode != want[i] {
			t.Errorf("%s: mode %v, want %v", e.Path, e.Mode, want[i])
		}
	}
}

// A file whose data would end past MaxTarBytes is refused at its header:
// Build never reads its data (the reader here fails past the header), so
// a bomb costs nothing to refuse. A file ending exactly at the cap is
// read, and a sparse file's declared size is MaxSparseBytes' to judge.
func TestBuildRefusesAFileEndingPastMaxTarBytes(t *testing.T) {
	body := strings.Repeat("z", 1000)
	raw := tarOf(t, file("big", body))
	end := int64(512 + len(body)) // one header block, then the data
	headerOnly := io.MultiReader(bytes.NewReader(raw[:512]), iotest.ErrReader(errors.New("read past the header")))
	_, err := Build(context.Background(), headerOnly, Limits{MaxTarBytes: end - 1})
	if !errors.Is(err, ErrLimit) || !errdefs.IsResourceExhausted(err) || !strings.Contains(err.Error(), "decompression bomb") {
		t.Fatalf("one byte past the cap: err = %v, want ErrLimit before any data is read", err)
	}
	if _, err := Build(context.Background(), bytes.NewReader(raw), Limits{MaxTarBytes: end}); err != nil {
		t.Fatalf("ending at the cap: %v", err)
	}
	if _, err := Build(context.Background(), bytes.NewReader(raw), Limits{}); err != nil {
		t.Fatalf("no cap: %v", err)
	}
}
