package contents

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/klauspost/compress/zstd"
	"github.com/moby/moby/api/types/container"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/layerindex"
	"github.com/wharfproject/wharf/internal/layertoc"
	"github.com/wharfproject/wharf/internal/testregistry"
)

func baseLayer(t testing.TB) []byte {
	return tarOf(t,
		tdir("etc"), tfile("etc/os-release", "ID=test\n"), tfile("etc/passwd", "root:x:0:0\n"),
		tdir("bin"), tfile("bin/sh", strings.Repeat("#!", 1000)), tlink("bin/ash", "bin/sh"),
		tsym("etc/alias", "/etc/passwd"), tsym("abs", "../../etc"),
	)
}

func listOf(t testing.TB, r *Room, img *Image, opts types.FilesOptions) []types.FileEntry {
	t.Helper()
	var out []types.FileEntry
	if err := r.Files(context.Background(), img, opts, func(e types.FileEntry) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func paths(es []types.FileEntry) string {
	var ps []string
	for _, e := range es {
		ps = append(ps, e.Path)
	}
	return strings.Join(ps, " ")
}

func cat(t testing.TB, r *Room, img *Image, p string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.Cat(context.Background(), img, p, &buf); err != nil {
		t.Fatalf("cat %s: %v", p, err)
	}
	return buf.String()
}

func TestFilesListsTheMergedView(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	upper := tarOf(t, tdir("etc"), tfile("etc/.wh.passwd", ""), tfile("etc/hostname", "box\n"))
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, baseLayer(t))), lb(gzipOf(t, upper)))
	got := listOf(t, r, img, types.FilesOptions{Path: "/", Recursive: true})
	want := "/abs /bin /bin/ash /bin/sh /etc /etc/alias /etc/hostname /etc/os-release"
	if paths(got) != want {
		t.Fatalf("ls -R /:\n got %s\nwant %s", paths(got), want)
	}
	for _, e := range got {
		if e.Source != "stream" || e.Layer == "" {
			t.Errorf("%s: Source %q Layer %q", e.Path, e.Source, e.Layer)
		}
		if e.Path == "/bin/ash" && (e.Type != "hardlink" || e.Size != 2000 || e.Linkname != "/bin/sh") {
			t.Errorf("a hardlink lists its file's size: %+v", e)
		}
		if e.Path == "/etc/hostname" && (e.Layer != img.Layers[1].Digest.String() || e.Digest != digest.FromString("box\n").String() || e.Type != "file") {
			t.Errorf("hostname: %+v", e)
		}
	}
	layers := listOf(t, r, img, types.FilesOptions{Path: "/etc", Layers: true})
	if got := paths(layers); got != "/etc/alias /etc/os-release /etc/passwd /etc/.wh.passwd /etc/hostname" {
		t.Fatalf("--layers /etc: %s", got)
	}
	if err := r.Files(context.Background(), img, types.FilesOptions{Path: "/nope"}, func(types.FileEntry) error { return nil }); !errdefs.IsNotFound(err) {
		t.Fatalf("missing path: %v", err)
	}
}

// N concurrent requests for one image build each layer once: one Open.
func TestConcurrentRequestsBuildOnce(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	blobs.gate = make(chan struct{})
	img := imageOf(blobs, lb(gzipOf(t, baseLayer(t))))
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Stat(context.Background(), img, "/etc/passwd")
			errs <- err
		}()
	}
	// Every caller is waiting on the one build once the gate opens: the
	// build is the only Open, and the gate holds it.
	for blobs.opens.Load() == 0 {
		runtimeGosched()
	}
	close(blobs.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := blobs.opens.Load(); got != 1 {
		t.Fatalf("%d concurrent requests opened the layer %d times, want 1", n, got)
	}
}

// A restart finds the index on disk: no blob is read to list again.
func TestCachedIndexSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, baseLayer(t))))
	first := listOf(t, newRoom(t, dir, 0), img, types.FilesOptions{Recursive: true})
	if blobs.opens.Load() != 1 {
		t.Fatalf("first listing: %d opens", blobs.opens.Load())
	}
	r2 := newRoom(t, dir, 0)
	second := listOf(t, r2, img, types.FilesOptions{Recursive: true})
	if blobs.opens.Load() != 1 || blobs.ranges.Load() != 0 {
		t.Fatalf("after a restart: %d opens, %d ranges; want no more", blobs.opens.Load(), blobs.ranges.Load())
	}
	if paths(first) != paths(second) {
		t.Fatalf("restart changed the listing: %s vs %s", paths(first), paths(second))
	}
	// And its checkpoints: a file read is one range request.
	if got := cat(t, r2, img, "/bin/ash"); got != strings.Repeat("#!", 1000) {
		t.Fatalf("cat after restart: %q", got)
	}
	if blobs.opens.Load() != 1 || blobs.ranges.Load() != 1 {
		t.Fatalf("cat after restart: %d opens, %d ranges; want 1 open in all and 1 range", blobs.opens.Load(), blobs.ranges.Load())
	}
}

// A layer read whole once, then a file of it: one Range request, no Open.
func TestStreamThenFileReadIsOneRange(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, baseLayer(t))))
	listOf(t, r, img, types.FilesOptions{Recursive: true})
	opens := blobs.opens.Load()
	if got := cat(t, r, img, "/etc/alias"); got != "root:x:0:0\n" {
		t.Fatalf("cat through a symlink: %q", got)
	}
	if blobs.opens.Load() != opens || blobs.ranges.Load() != 1 {
		t.Fatalf("file read: %d more opens, %d ranges; want 0 and 1", blobs.opens.Load()-opens, blobs.ranges.Load())
	}
}

// A layer that does not match its digest caches nothing; the right bytes
// are indexed afterwards.
func TestFailedDigestCachesNothing(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	b, desc := gzipOf(t, baseLayer(t))
	img := imageOf(blobs, lb(b, desc))
	other, _ := gzipOf(t, tarOf(t, tfile("evil", "x")))
	blobs.corrupt[desc.Digest] = other
	if err := r.Files(context.Background(), img, types.FilesOptions{}, func(types.FileEntry) error { return nil }); err == nil {
		t.Fatal("a layer that fails its digest was listed")
	}
	if files, bytes, _ := r.Usage(); files != 0 || bytes != 0 {
		t.Fatalf("a failed layer left %d files (%d bytes) in the cache", files, bytes)
	}
	delete(blobs.corrupt, desc.Digest)
	if got := paths(listOf(t, r, img, types.FilesOptions{})); got != "/abs /bin /etc" {
		t.Fatalf("after the right bytes: %s", got)
	}
}

func TestDiffIDMismatchIsRefused(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, baseLayer(t))))
	img.DiffIDs = []digest.Digest{digest.FromString("not the tar")}
	err := r.Files(context.Background(), img, types.FilesOptions{}, func(types.FileEntry) error { return nil })
	if !errors.Is(err, ErrDiffIDMismatch) || !errdefs.IsDataLoss(err) {
		t.Fatalf("err = %v", err)
	}
	// The layer's bytes were verified: its index is kept, and an image
	// whose config names it right reads it.
	good := imageOf(blobs, lb(gzipOf(t, baseLayer(t))))
	good.Manifest.Digest = digest.FromString("another manifest")
	good.DiffIDs = []digest.Digest{digest.FromBytes(baseLayer(t))}
	if got := paths(listOf(t, r, good, types.FilesOptions{})); got != "/abs /bin /etc" || blobs.opens.Load() != 1 {
		t.Fatalf("the right image: %s after %d opens", got, blobs.opens.Load())
	}
}

// The budget evicts the least recently used index first, also at start.
func TestBudgetEvictsOldestFirst(t *testing.T) {
	dir := t.TempDir()
	blobs := newMemBlobs(false)
	var imgs []*Image
	for _, name := range []string{"a", "b", "c"} {
		imgs = append(imgs, imageOf(blobs, lb(gzipOf(t, tarOf(t, tfile(name, strings.Repeat(name, 100)))))))
	}
	r := newRoom(t, dir, 0)
	listOf(t, r, imgs[0], types.FilesOptions{})
	_, one, _ := r.Usage()
	// Room for two indexes of about this size.
	budget := 2*one + one/2
	r = newRoom(t, dir, budget)
	listOf(t, r, imgs[1], types.FilesOptions{})
	r.layers = newMemCache[string, *layerData](memIndexBudget) // forget the decoded ones
	listOf(t, r, imgs[0], types.FilesOptions{})                // a use: b is now the oldest
	listOf(t, r, imgs[2], types.FilesOptions{})
	if files, used, _ := r.Usage(); files != 2 || used > budget {
		t.Fatalf("%d files, %d bytes; budget %d", files, used, budget)
	}
	if r.cache.Has(imgs[1].Layers[0].Digest) || !r.cache.Has(imgs[0].Layers[0].Digest) || !r.cache.Has(imgs[2].Layers[0].Digest) {
		t.Fatal("the evicted index is not the least recently used one")
	}
	r.SetBudget(one)
	if files, _, _ := r.Usage(); files != 1 || !r.cache.Has(imgs[2].Layers[0].Digest) {
		t.Fatalf("a lower budget left %d files", files)
	}
}

func TestTOCSources(t *testing.T) {
	raw := tarOf(t, tdir("usr"), tfile("usr/big", strings.Repeat("0123456789", 50_000)), tfile("usr/small", "hello\n"), tlink("usr/hard", "usr/small"))
	for name, mk := range map[string]func(testing.TB, []byte) ([]byte, ocispec.Descriptor){"estargz": estargzOf, "zstd:chunked": zstdChunkedOf} {
		t.Run(name, func(t *testing.T) {
			r := newRoom(t, t.TempDir(), 0)
			blobs := newMemBlobs(false)
			img := imageOf(blobs, lb(mk(t, raw)))
			got := listOf(t, r, img, types.FilesOptions{Path: "/usr"})
			if paths(got) != "/usr/big /usr/hard /usr/small" {
				t.Fatalf("listing: %s", paths(got))
			}
			for _, e := range got {
				if e.Source != name {
					t.Errorf("%s: Source %q", e.Path, e.Source)
				}
			}
			if blobs.opens.Load() != 0 || blobs.ranges.Load() > 2 {
				t.Fatalf("listing from the TOC: %d opens, %d ranges", blobs.opens.Load(), blobs.ranges.Load())
			}
			if got := cat(t, r, img, "/usr/hard"); got != "hello\n" {
				t.Fatalf("cat hardlink: %q", got)
			}
			if got := cat(t, r, img, "/usr/big"); got != strings.Repeat("0123456789", 50_000) {
				t.Fatal("cat big: wrong bytes")
			}
			var out bytes.Buffer
			if err := r.Archive(context.Background(), img, "/usr", func(container.PathStat) (io.Writer, error) { return &out, nil }); err != nil {
				t.Fatal(err)
			}
			tr := tar.NewReader(&out)
			var names []string
			for {
				h, err := tr.Next()
				if err != nil {
					break
				}
				b, _ := io.ReadAll(tr)
				names = append(names, h.Name+":"+h.Linkname+":"+strconv.Itoa(len(b)))
			}
			if got := strings.Join(names, " "); got != "usr/::0 usr/big::500000 usr/hard::6 usr/small:usr/hard:0" {
				t.Fatalf("archive of a TOC layer: %s", got)
			}
			if blobs.opens.Load() != 0 {
				t.Fatalf("a TOC layer's file read downloaded the layer")
			}
		})
	}
}

func TestSparseAndHardlinkReads(t *testing.T) {
	const size = 1 << 20
	var buf bytes.Buffer
	buf.Write(tarOf(t, tfile("before", "b"))[:1024])
	buf.Write(testregistry.SparseTarEntry("holes", size, []byte("tail")))
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "link", Typeflag: tar.TypeLink, Linkname: "before", ModTime: testTime})
	tw.Close()
	for _, local := range []bool{false, true} {
		r := newRoom(t, t.TempDir(), 0)
		blobs := newMemBlobs(local)
		img := imageOf(blobs, lb(gzipOf(t, buf.Bytes())))
		if got := cat(t, r, img, "/holes"); got != string(make([]byte, size-4))+"tail" {
			t.Fatalf("sparse file (local %v): %d bytes", local, len(got))
		}
		if got := cat(t, r, img, "/link"); got != "b" {
			t.Fatalf("hardlink (local %v): %q", local, got)
		}
	}
}

// Archive writes what dockerd's GET /containers/{id}/archive writes: read
// back with archive/tar.
func TestArchiveReadsBack(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(true)
	long := strings.Repeat("d", 120) + "/" + strings.Repeat("f", 130)
	upper := tarOf(t, tdir(strings.Repeat("d", 120)), tfile(long, "long"), tdir("etc"), tfile("etc/.wh.os-release", ""))
	img := imageOf(blobs, lb(gzipOf(t, baseLayer(t))), lb(gzipOf(t, upper)))
	for _, c := range []struct {
		path string
		stat container.PathStat
		want []string
	}{
		{"/etc", container.PathStat{Name: "etc"}, []string{"etc/ dir", "etc/alias sym /etc/passwd", "etc/passwd file root:x:0:0\n"}},
		{"/bin/", container.PathStat{Name: "bin"}, []string{"bin/ dir", "bin/ash file " + strings.Repeat("#!", 1000), "bin/sh link bin/ash"}},
		{"/", container.PathStat{Name: "/"}, []string{"/ dir", "/abs sym ../../etc", "/bin/ dir", "/bin/ash file " + strings.Repeat("#!", 1000), "/bin/sh link /bin/ash", "/" + strings.Repeat("d", 120) + "/ dir", "/" + long + " file long", "/etc/ dir", "/etc/alias sym /etc/passwd", "/etc/passwd file root:x:0:0\n"}},
		{"/etc/alias", container.PathStat{Name: "alias", LinkTarget: "/etc/passwd"}, []string{"alias sym /etc/passwd"}},
		{"/" + long, container.PathStat{Name: strings.Repeat("f", 130)}, []string{strings.Repeat("f", 130) + " file long"}},
	} {
		var got []string
		var out bytes.Buffer
		err := r.Archive(context.Background(), img, c.path, func(st container.PathStat) (io.Writer, error) {
			if st.Name != c.stat.Name || st.LinkTarget != c.stat.LinkTarget {
				t.Errorf("%s: stat %+v", c.path, st)
			}
			return &out, nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		tr := tar.NewReader(&out)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			switch h.Typeflag {
			case tar.TypeDir:
				got = append(got, h.Name+" dir")
			case tar.TypeSymlink:
				got = append(got, h.Name+" sym "+h.Linkname)
			case tar.TypeLink:
				got = append(got, h.Name+" link "+h.Linkname)
			default:
				b, _ := io.ReadAll(tr)
				got = append(got, h.Name+" file "+string(b))
			}
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("archive %s:\n got %q\nwant %q", c.path, got, c.want)
		}
	}
}

// A pull's bytes build the index in the same pass: listing afterwards
// reads no blob.
func TestIndexLayerDuringPull(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	b, desc := gzipOf(t, baseLayer(t))
	img := imageOf(blobs, lb(b, desc))
	w, commit, _ := r.IndexLayer(context.Background(), desc)
	for _, chunk := range chunks(b, 100) {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	listOf(t, r, img, types.FilesOptions{Recursive: true})
	if blobs.opens.Load() != 0 {
		t.Fatal("listing after the pull read the blob")
	}
	if w, _, _ := r.IndexLayer(context.Background(), desc); w != nil {
		t.Fatal("an indexed layer was wanted again")
	}

	// Not a tar: the writer keeps accepting, and nothing is kept.
	junk := bytes.Repeat([]byte("junk"), 100_000)
	d2 := desc
	d2.Digest = digest.FromBytes(junk)
	w, commit, _ = r.IndexLayer(context.Background(), d2)
	for _, chunk := range chunks(junk, 4096) {
		if n, err := w.Write(chunk); err != nil || n != len(chunk) {
			t.Fatalf("write after a failed build: %d, %v", n, err)
		}
	}
	if err := commit(); err != nil || r.cache.Has(d2.Digest) {
		t.Fatalf("a failed build: %v, cached %v", err, r.cache.Has(d2.Digest))
	}
	// Aborted: nothing kept.
	_, d3 := gzipOf(t, tarOf(t, tfile("x", "y")))
	w, _, abort := r.IndexLayer(context.Background(), d3)
	w.Write(b[:10])
	abort()
	if r.cache.Has(d3.Digest) {
		t.Fatal("an aborted pull's layer was cached")
	}
}

func chunks(b []byte, n int) [][]byte {
	var out [][]byte
	for len(b) > n {
		out = append(out, b[:n])
		b = b[n:]
	}
	return append(out, b)
}

// A layer over a limit gets a clear error and leaves nothing behind.
func TestLayerOverALimitCachesNothing(t *testing.T) {
	r, err := New(Options{Dir: t.TempDir(), Limits: layerindex.Limits{MaxEntries: 3}})
	if err != nil {
		t.Fatal(err)
	}
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, baseLayer(t))))
	err = r.Files(context.Background(), img, types.FilesOptions{}, func(types.FileEntry) error { return nil })
	if !errors.Is(err, layerindex.ErrLimit) {
		t.Fatalf("err = %v, want ErrLimit", err)
	}
	if files, _, _ := r.Usage(); files != 0 {
		t.Fatal("a refused layer was cached")
	}
}

// A zstd layer without a TOC is read whole once; a file of it is read by
// decompressing from the start (no checkpoints), verified.
func TestZstdLayerWithoutTOC(t *testing.T) {
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(baseLayer(t))
	zw.Close()
	b := buf.Bytes()
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerZstd, Digest: digest.FromBytes(b), Size: int64(len(b))}
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(b, desc))
	listOf(t, r, img, types.FilesOptions{Recursive: true}) // the index, keeping no file
	if got := cat(t, r, img, "/etc/os-release"); got != "ID=test\n" {
		t.Fatalf("cat: %q", got)
	}
	if blobs.opens.Load() != 2 || blobs.ranges.Load() != 0 {
		t.Fatalf("%d opens, %d ranges; want 2 (index, file) and 0", blobs.opens.Load(), blobs.ranges.Load())
	}
}

// A plain (uncompressed) layer's file is one range of exactly the file.
func TestPlainLayerFileIsOneExactRange(t *testing.T) {
	raw := baseLayer(t)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(raw, desc))
	listOf(t, r, img, types.FilesOptions{Recursive: true}) // the index, keeping no file
	if got := cat(t, r, img, "/etc/passwd"); got != "root:x:0:0\n" {
		t.Fatalf("cat: %q", got)
	}
	if blobs.opens.Load() != 1 || blobs.ranges.Load() != 1 {
		t.Fatalf("%d opens, %d ranges; want 1 and 1", blobs.opens.Load(), blobs.ranges.Load())
	}
}

// Bytes that do not hash to the digest the index recorded are never
// handed out: the writer gets nothing.
func TestTamperedFileBytesAreRefused(t *testing.T) {
	raw := baseLayer(t)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(raw, desc))
	listOf(t, r, img, types.FilesOptions{})
	blobs.corrupt[desc.Digest] = bytes.Replace(raw, []byte("root:x:0:0"), []byte("evil:x:0:0"), 1)
	var out bytes.Buffer
	err := r.Cat(context.Background(), img, "/etc/passwd", &out)
	if !errors.Is(err, ErrContentMismatch) || out.Len() != 0 {
		t.Fatalf("err = %v, %d bytes handed out", err, out.Len())
	}
}

// A file over maxHeldFile is spooled for its check, not held in memory,
// and the spool is removed.
func TestLargeFileIsSpooledAndVerified(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", (maxHeldFile+4096)/16)
	dir := t.TempDir()
	r := newRoom(t, dir, 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, tarOf(t, tfile("big", big)))))
	if got := cat(t, r, img, "/big"); got != big {
		t.Fatal("wrong bytes")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "read-") {
			t.Fatalf("spool %s left behind", e.Name())
		}
	}
}

// A TOC whose digest is not the annotated one is refused, not read around.
func TestTOCDigestMismatchIsRefused(t *testing.T) {
	b, desc := estargzOf(t, baseLayer(t))
	desc.Annotations[layertoc.AnnotationEStargzTOCDigest] = digest.FromString("another TOC").String()
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(b, desc))
	err := r.Files(context.Background(), img, types.FilesOptions{}, func(types.FileEntry) error { return nil })
	if !errors.Is(err, layertoc.ErrDigestMismatch) || !errdefs.IsDataLoss(err) {
		t.Fatalf("err = %v", err)
	}
	if files, _, _ := r.Usage(); files != 0 || blobs.opens.Load() != 0 {
		t.Fatalf("%d files cached, %d opens", files, blobs.opens.Load())
	}
}

// A read asks a registry for no more than it needs: a file alone is its
// span (not the rest of the layer), a directory runs to where its last
// entry ends.
func TestReadsAskOnlyTheirSpan(t *testing.T) {
	big := make([]byte, 16<<20)
	// Incompressible test data, generated in bulk: a byte at a time it
	// took 5 s under -race.
	_, _ = rand.NewChaCha8([32]byte{1, 2}).Read(big)
	raw := tarOf(t, tdir("a"), tfile("a/1", "one"), tfile("a/2", "two"), tfile("m", string(big[:2<<20])), tfile("z", string(big)))
	b, desc := gzipOf(t, raw)
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(b, desc))
	listOf(t, r, img, types.FilesOptions{})
	for _, c := range []struct{ path string }{{"/a"}, {"/m"}} {
		blobs.rangeLens = nil
		var out bytes.Buffer
		if err := r.Archive(context.Background(), img, c.path, func(container.PathStat) (io.Writer, error) { return &out, nil }); err != nil {
			t.Fatal(err)
		}
		if len(blobs.rangeLens) != 1 || blobs.rangeLens[0] > int64(len(b))/2 {
			t.Fatalf("archive of %s asked %v of a %d-byte layer", c.path, blobs.rangeLens, len(b))
		}
	}
}

// The layers of one image are read at once, up to layerBuilds of them:
// every Open is held until three are under way.
func TestLayersAreIndexedConcurrently(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	blobs.gate = make(chan struct{})
	var layers []layerBlob
	for _, n := range []string{"a", "b", "c", "d"} {
		layers = append(layers, lb(gzipOf(t, tarOf(t, tfile(n, n)))))
	}
	img := imageOf(blobs, layers...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- r.Files(ctx, img, types.FilesOptions{}, func(types.FileEntry) error { return nil })
	}()
	// A bounded wait by count, not by time: sequential reads never get
	// past one Open.
	for i := 0; blobs.opens.Load() < layerBuilds && i < 10_000_000; i++ {
		runtimeGosched()
	}
	if got := blobs.opens.Load(); got != layerBuilds {
		cancel()
		<-done
		t.Fatalf("%d layers read at once, want %d", got, layerBuilds)
	}
	close(blobs.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if blobs.opens.Load() != 4 {
		t.Fatalf("%d opens for 4 layers", blobs.opens.Load())
	}
}
