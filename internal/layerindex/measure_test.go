package layerindex

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

// streamTree is a tar of the tree at root, written as it is read (files
// larger than the rest of max are written empty, so the stream stays
// under about max bytes).
func streamTree(root string, max int64) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		var n int64
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: skipped
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			link := ""
			if fi.Mode()&fs.ModeSymlink != 0 {
				link, _ = os.Readlink(p)
			}
			h, err := tar.FileInfoHeader(fi, link)
			if err != nil {
				return nil // sockets
			}
			h.Name, _ = filepath.Rel(root, p)
			if d.IsDir() {
				h.Name += "/"
			}
			var body io.Reader
			if fi.Mode().IsRegular() {
				f, err := os.Open(p)
				if err != nil || n+fi.Size() > max {
					h.Size = 0
				} else {
					defer f.Close()
					body = f
				}
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if body != nil {
				c, err := io.Copy(tw, body)
				n += c
				return err
			}
			return nil
		})
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// TestIndexSizeOfARealTree reports the encoded index's size against the
// uncompressed tar of /usr/lib (up to 1 GiB of file data).
func TestIndexSizeOfARealTree(t *testing.T) {
	measureOnly(t, "reads /usr/lib")
	if _, err := os.Stat("/usr/lib"); err != nil {
		t.Skip("no /usr/lib")
	}
	ix, err := Build(context.Background(), streamTree("/usr/lib", 1<<30), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, ix); err != nil {
		t.Fatal(err)
	}
	n := len(ix.Entries)
	t.Logf("/usr/lib: tar %d bytes, %d entries; encoded index %d bytes = %.3f%% of the tar, %.1f bytes an entry",
		ix.TarSize, n, buf.Len(), 100*float64(buf.Len())/float64(ix.TarSize), float64(buf.Len())/float64(n))
	if 100*float64(buf.Len())/float64(ix.TarSize) > 2 {
		t.Errorf("the index is over 2%% of the layer")
	}

	before := heapInUse()
	start := time.Now()
	v, err := Merge(context.Background(), []*Index{ix}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	heap := heapInUse() - before
	items := 0
	start = time.Now()
	v.List(context.Background(), "/", true, func(Item) error { items++; return nil })
	t.Logf("merged view: %d items, built in %v, %.0f heap bytes a node beside the index; recursive listing in %v",
		items, took, float64(heap)/float64(items), time.Since(start))
	runtime.KeepAlive(v)
}

// tinyEntries is a tar of n empty files with short distinct names,
// written as it is read.
func tinyEntries(n int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		var err error
		for i := 0; i < n && err == nil; i++ {
			err = tw.WriteHeader(&tar.Header{Name: "d" + strconv.Itoa(i%1000) + "/f" + strconv.Itoa(i), Typeflag: tar.TypeReg, Mode: 0o644, ModTime: testTime})
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryPerEntry measures an index's heap and encoded size per entry
// on 100k tiny entries, and checks the estimate MaxIndexBytes counts
// (entryCost) is not below what the heap holds.
func TestMemoryPerEntry(t *testing.T) {
	measureOnly(t, "100k entries")
	const n = 100_000
	before := heapInUse()
	ix, err := Build(context.Background(), tinyEntries(n), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	heap := float64(heapInUse()-before) / n
	var est int64
	for i := range ix.Entries {
		est += entryCost(&ix.Entries[i])
	}
	var buf bytes.Buffer
	Encode(&buf, ix)
	t.Logf("%d entries: heap %.0f bytes an entry, estimate %.0f, encoded %.1f bytes an entry (tar %.0f)",
		n, heap, float64(est)/n, float64(buf.Len())/n, float64(ix.TarSize)/n)
	if float64(est)/n < heap*0.9 {
		t.Errorf("entryCost underestimates the heap: %.0f < %.0f", float64(est)/n, heap)
	}
	runtime.KeepAlive(ix)
}

// TestMillionTinyEntries: the default limits refuse a layer of 10⁶ empty
// files with a clear error, having held at most MaxEntries of them.
func TestMillionTinyEntries(t *testing.T) {
	measureOnly(t, "10⁶ entries; TestMillionEntriesOverTheCapRefused holds the refusal on a lowered cap")
	_, err := Build(context.Background(), tinyEntries(1_000_000), Limits{})
	if !errors.Is(err, ErrLimit) || !errdefs.IsResourceExhausted(err) {
		t.Fatalf("err = %v, want ErrLimit", err)
	}
	t.Logf("10⁶ entries: %v", err)
}

// measureOnly skips a production-sized measurement unless
// LAYERINDEX_MEASURE=1: the figures it prints are quoted in limits.go, and
// under -race each takes 6–26 s.
func measureOnly(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("LAYERINDEX_MEASURE") != "1" {
		t.Skip("measurement (" + what + "): LAYERINDEX_MEASURE=1 runs it")
	}
}
