package safetar

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// sparseArchive is a tar with one PAX (0.1) sparse entry declaring size
// bytes, followed by a regular file.
func sparseArchive(t testing.TB, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.Write(testregistry.SparseTarEntry("big", size, []byte("x")))
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "after", Size: 1, Mode: 0o644, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte("y"))
	tw.Close()
	return buf.Bytes()
}

// archive/tar itself expands the entry: the attack the package exists for.
func TestPlainTarExpandsSparse(t *testing.T) {
	const size = 64 << 20
	b := sparseArchive(t, size)
	tr := tar.NewReader(bytes.NewReader(b))
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, tr)
	if err != nil || n != size || hdr.Size != size || hdr.Typeflag != tar.TypeReg {
		t.Fatalf("archive/tar read %d bytes (%v) of a %d-byte archive, header size %d type %q; the fixture no longer expands", n, err, len(b), hdr.Size, hdr.Typeflag)
	}
}

func TestNextRefusesSparse(t *testing.T) {
	b := sparseArchive(t, 512<<20)
	_, err := NewReader(bytes.NewReader(b)).Next()
	if !errors.Is(err, ErrSparse) || !errdefs.IsInvalidArgument(err) {
		t.Fatalf("err = %v, want ErrSparse and InvalidArgument", err)
	}
}

// Read's bound holds without the header check: the sparse entry read
// through Read stops at the archive's size.
func TestReadBoundedByArchiveBytes(t *testing.T) {
	b := sparseArchive(t, 512<<20)
	r := NewReader(bytes.NewReader(b))
	if _, err := r.tr.Next(); err != nil { // past the sparse check on purpose
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, r)
	if !errors.Is(err, ErrExpanded) || !errdefs.IsInvalidArgument(err) {
		t.Fatalf("err = %v, want ErrExpanded", err)
	}
	if n > int64(len(b)) {
		t.Fatalf("read %d bytes of entry data from a %d-byte archive", n, len(b))
	}
}

func TestOrdinaryArchiveReadsWhole(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := map[string][]byte{"a": bytes.Repeat([]byte("a"), 100000), "empty": nil, "b": []byte("b")}
	for _, name := range []string{"a", "empty", "b"} {
		tw.WriteHeader(&tar.Header{Name: name, Size: int64(len(files[name])), Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX, PAXRecords: map[string]string{"SCHILY.xattr.user.x": "1"}})
		tw.Write(files[name])
	}
	tw.Close()
	r := NewReader(&buf)
	for _, name := range []string{"a", "empty", "b"} {
		hdr, err := r.Next()
		if err != nil || hdr.Name != name {
			t.Fatalf("Next = %v, %v; want %s", hdr, err, name)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, files[name]) {
			t.Fatalf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

func TestSparseTypes(t *testing.T) {
	for _, tc := range []struct {
		hdr  tar.Header
		want bool
	}{
		{tar.Header{Typeflag: tar.TypeGNUSparse}, true},
		{tar.Header{Typeflag: tar.TypeReg, PAXRecords: map[string]string{"GNU.sparse.major": "1"}}, true},
		{tar.Header{Typeflag: tar.TypeReg, PAXRecords: map[string]string{"GNU.sparse.map": "0,1"}}, true},
		{tar.Header{Typeflag: tar.TypeReg, PAXRecords: map[string]string{"path": "x"}}, false},
		{tar.Header{Typeflag: tar.TypeReg}, false},
	} {
		if got := Sparse(&tc.hdr); got != tc.want {
			t.Errorf("Sparse(%+v) = %v", tc.hdr, got)
		}
	}
}

// FuzzReader: whatever the bytes, the entry data read never exceeds the
// archive's length, and nothing panics.
func FuzzReader(f *testing.F) {
	f.Add(sparseArchive(f, 1<<20))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "f", Size: 3, Mode: 0o644})
	tw.Write([]byte("abc"))
	tw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		var total int64
		for range 64 {
			if _, err := r.Next(); err != nil {
				break
			}
			n, err := io.Copy(io.Discard, r)
			total += n
			if err != nil {
				break
			}
		}
		if total > int64(len(b)) {
			t.Fatalf("%d bytes of entry data from %d bytes", total, len(b))
		}
	})
}
