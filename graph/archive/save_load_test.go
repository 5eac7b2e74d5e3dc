package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
)

func saveToBytes(t *testing.T, s *Archiver, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.ExportImage(context.Background(), names, nil, &buf); err != nil {
		t.Fatalf("ExportImage(%v): %v", names, err)
	}
	return buf.Bytes()
}

func tarFiles(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		out[hdr.Name] = body
	}
}

func loadBytes(t *testing.T, s *Archiver, b []byte) ([]string, error) {
	t.Helper()
	var lines []string
	out := types.ProgressFunc(func(m jsonstream.Message) error { lines = append(lines, m.Stream); return nil })
	err := s.LoadImage(context.Background(), bytes.NewReader(b), true, nil, out)
	return lines, err
}

func TestExportImageLayout(t *testing.T) {
	s, ev := newLocalTestStore(t)
	id := graphtest.ImportImage(t, s, "127.0.0.1:5000/imported:1.0", "x")
	b := saveToBytes(t, s, "127.0.0.1:5000/imported:1.0")
	files := tarFiles(t, b)
	rec, meta := imageMeta(t, s, id.String())
	var dm []dockerManifestEntry
	if err := json.Unmarshal(files["manifest.json"], &dm); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`[{"Config":"blobs/sha256/%s","RepoTags":["127.0.0.1:5000/imported:1.0"],"Layers":["blobs/sha256/%s"]}]`,
		id.Encoded(), meta.Manifest.Layers[0].Digest.Encoded())
	if string(files["manifest.json"]) != want {
		t.Fatalf("manifest.json = %s\nwant %s", files["manifest.json"], want)
	}
	wantRepos := fmt.Sprintf(`{"127.0.0.1:5000/imported":{"1.0":"%s"}}`, meta.Manifest.Layers[0].Digest.Encoded())
	if string(files["repositories"]) != wantRepos {
		t.Fatalf("repositories = %s", files["repositories"])
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Fatalf("oci-layout = %s", files["oci-layout"])
	}
	var idx ocispec.Index
	json.Unmarshal(files["index.json"], &idx)
	if len(idx.Manifests) != 1 || idx.Manifests[0].Digest != rec.Manifest.Digest ||
		idx.Manifests[0].Annotations[store.AnnImageName] != "127.0.0.1:5000/imported:1.0" || idx.Manifests[0].Annotations[ocispec.AnnotationRefName] != "1.0" {
		t.Fatalf("index.json = %s", files["index.json"])
	}
	for n, body := range files {
		if d, ok := blobName(strings.TrimSuffix(n, "/")); ok && digest.FromBytes(body) != d {
			t.Fatalf("%s does not match its digest", n)
		}
	}
	// An independent docker-archive reader (go-containerregistry) reads it.
	tag, _ := name.NewTag("127.0.0.1:5000/imported:1.0")
	img, err := tarball.Image(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cn, err := img.ConfigName()
	if err != nil || cn.String() != id.String() {
		t.Fatalf("tarball config = %v %v", cn, err)
	}
	if acts := ev.Actions(); acts[len(acts)-1] != "save" {
		t.Fatalf("events = %v", acts)
	}
	// A missing name fails before anything is written.
	var buf bytes.Buffer
	err = s.ExportImage(context.Background(), []string{"127.0.0.1:5000/imported:1.0", "nosuchimage"}, nil, &buf)
	if !errdefs.IsNotFound(err) || err.Error() != "No such image: nosuchimage" || buf.Len() != 0 {
		t.Fatalf("missing: %v (%d bytes written)", err, buf.Len())
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	src, _ := newLocalTestStore(t)
	a := graphtest.ImportImage(t, src, "app:1", "same", "LABEL v=1")
	b := graphtest.ImportImage(t, src, "other/app:2", "same", "LABEL v=2") // shares a's layer
	c := graphtest.ImportImage(t, src, "", "untagged")
	tagTestImage(t, src, "app:1", "app", "latest")
	tarball := saveToBytes(t, src, "app", "other/app:2", c.Encoded()[:12])

	dst, ev := newLocalTestStore(t)
	lines, err := loadBytes(t, dst, tarball)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	want := []string{"Loaded image ID: " + c.String() + "\n", "Loaded image: app:1\n", "Loaded image: app:latest\n", "Loaded image: other/app:2\n"}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("lines = %q\nwant %q", lines, want)
	}
	for _, id := range []digest.Digest{a, b, c} {
		sr, _ := src.st.Lookup(id.String())
		dr, err := dst.st.Lookup(id.String())
		if err != nil {
			t.Fatalf("%s missing after load: %v", id, err)
		}
		if dr.Manifest.Digest != sr.Manifest.Digest {
			t.Fatalf("manifest digest %s != %s", dr.Manifest.Digest, sr.Manifest.Digest)
		}
		if fmt.Sprint(dr.RepoTags) != fmt.Sprint(sr.RepoTags) {
			t.Fatalf("tags %v != %v", dr.RepoTags, sr.RepoTags)
		}
		// Everything an inspect is built from (record, manifest, config)
		// is the same; only when each store recorded and tagged it differs.
		if si, di := imageView(t, src, id.String()), imageView(t, dst, id.String()); si != di {
			t.Fatalf("image differs:\n%s\n%s", si, di)
		}
	}
	if n := strings.Count(strings.Join(ev.Actions(), ","), "load"); n != 3 {
		t.Fatalf("load events = %v", ev.Actions())
	}
	// Loading again is idempotent.
	if _, err := loadBytes(t, dst, tarball); err != nil || dst.st.Count() != 3 {
		t.Fatalf("reload: %v, %d images", err, dst.st.Count())
	}
}

// legacyTar builds a docker save archive in the pre-25 layout: <id>.json,
// <layer>/layer.tar (uncompressed; the second image's layer is a symlink to
// the first's), manifest.json, repositories.
func legacyTar(t *testing.T, mutate func(cfg map[string]any)) ([]byte, digest.Digest) {
	layer := graphtest.Tar(t, graphtest.TarEntry{Name: "hello", Body: "legacy"})
	diffID := digest.FromBytes(layer)
	cfg := map[string]any{
		"architecture": "amd64", "os": "linux", "created": "2026-12-03T07:46:09.011963844Z",
		"docker_version": "20.10.24", "comment": "imported for golden samples",
		"config": map[string]any{"Env": []string{"IMPORTED=1"}, "Cmd": []string{"/bin/sh"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID.String()}},
	}
	if mutate != nil {
		mutate(cfg)
	}
	cb, _ := json.Marshal(cfg)
	id := digest.FromBytes(cb)
	lid := "6ff093dda4b01800907774f342501b9ed8fc4aafa4d72f73280343d3175db664"
	manifest := fmt.Sprintf(`[{"Config":"%s.json","RepoTags":["127.0.0.1:5000/imported:1.0"],"Layers":["%s/layer.tar"]},`+
		`{"Config":"%s.json","RepoTags":["legacy-copy:1"],"Layers":["dup/layer.tar"]}]`, id.Encoded(), lid, id.Encoded())
	return graphtest.Tar(t,
		graphtest.TarEntry{Name: lid + "/", Typeflag: tar.TypeDir},
		graphtest.TarEntry{Name: lid + "/VERSION", Body: "1.0"},
		graphtest.TarEntry{Name: lid + "/json", Body: `{"id":"` + lid + `"}`},
		graphtest.TarEntry{Name: lid + "/layer.tar", Body: string(layer)},
		graphtest.TarEntry{Name: "dup/layer.tar", Typeflag: tar.TypeSymlink, Linkname: "../" + lid + "/layer.tar"},
		graphtest.TarEntry{Name: id.Encoded() + ".json", Body: string(cb)},
		graphtest.TarEntry{Name: "manifest.json", Body: manifest},
		graphtest.TarEntry{Name: "repositories", Body: `{"127.0.0.1:5000/imported":{"1.0":"` + lid + `"}}`},
	), id
}

func TestLoadLegacyDockerArchive(t *testing.T) {
	s, _ := newLocalTestStore(t)
	b, id := legacyTar(t, nil)
	lines, err := loadBytes(t, s, b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(lines) != "[Loaded image: 127.0.0.1:5000/imported:1.0\n Loaded image: legacy-copy:1\n]" {
		t.Fatalf("lines = %q", lines)
	}
	rec, meta := imageMeta(t, s, "legacy-copy:1")
	if rec.ID != id {
		t.Fatalf("lookup: %v", rec)
	}
	if rec.Manifest.MediaType != imagespec.MediaTypeDockerManifest || meta.Manifest.Layers[0].MediaType != imagespec.MediaTypeDockerLayer {
		t.Fatalf("media types: %s %s", rec.Manifest.MediaType, meta.Manifest.Layers[0].MediaType)
	}
	byID, cfg := imageConfig(t, s, id.String())
	if cfg.Comment != "imported for golden samples" || cfg.DockerVersion != "20.10.24" || len(byID.RepoTags) != 2 {
		t.Fatalf("image %+v, config %+v", byID, cfg)
	}
	// Saved again and loaded into a fresh store: same ID and manifest digest.
	again := saveToBytes(t, s, "legacy-copy:1")
	s2, _ := newLocalTestStore(t)
	if _, err := loadBytes(t, s2, again); err != nil {
		t.Fatal(err)
	}
	rec2, err := s2.st.Lookup("legacy-copy:1")
	if err != nil || rec2.ID != id || rec2.Manifest.Digest != rec.Manifest.Digest {
		t.Fatalf("re-load: %+v %v", rec2, err)
	}
}

func TestLoadRejectsInconsistentArchives(t *testing.T) {
	badDiff, _ := legacyTar(t, func(cfg map[string]any) {
		cfg["rootfs"] = map[string]any{"type": "layers", "diff_ids": []string{digest.FromString("other").String()}}
	})
	tooMany, _ := legacyTar(t, func(cfg map[string]any) { cfg["rootfs"] = map[string]any{"type": "layers"} })
	payload := []byte("hello")
	wrongBlob := graphtest.Tar(t,
		graphtest.TarEntry{Name: "blobs/sha256/" + digest.FromString("different").Encoded(), Body: string(payload)},
		graphtest.TarEntry{Name: "index.json", Body: `{"schemaVersion":2,"manifests":[]}`})
	missingBlob := graphtest.Tar(t, graphtest.TarEntry{Name: "index.json", Body: `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` +
		digest.FromString("m").String() + `","size":1}]}`})
	tests := []struct {
		name string
		body []byte
		msg  string
	}{
		{"diff id mismatch", badDiff, "has diff ID"},
		{"layer count mismatch", tooMany, "1 layers but 0 diff IDs"},
		{"blob content mismatch", wrongBlob, "digest mismatch"},
		{"missing blob", missingBlob, "is missing"},
		{"no manifest", graphtest.Tar(t, graphtest.TarEntry{Name: "hello", Body: "x"}), "no manifest.json or index.json"},
		{"bad manifest.json", graphtest.Tar(t, graphtest.TarEntry{Name: "manifest.json", Body: "{"}), "manifest.json"},
		{"garbage", bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 300), "invalid tar archive"},
		{"truncated", graphtest.Tar(t, graphtest.TarEntry{Name: "manifest.json", Body: strings.Repeat("x", 2000)})[:1000], "invalid tar archive: unexpected EOF"},
		{"empty", nil, "no manifest.json or index.json"},
		{"huge manifest.json", graphtest.Tar(t, graphtest.TarEntry{Name: "manifest.json", Body: strings.Repeat(" ", store.MaxManifestSize+1)}), "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newLocalTestStore(t)
			_, err := loadBytes(t, s, tt.body)
			if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want InvalidArgument containing %q", err, tt.msg)
			}
			if s.st.Count() != 0 {
				t.Fatal("a rejected archive recorded images")
			}
			assertNoBlobs(t, s)
		})
	}
}

// assertNoBlobs checks that a rejected load left no blob behind.
func assertNoBlobs(t *testing.T, s *Archiver) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(s.st.Root(), store.BlobsDir, "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("rejected load left %d blobs", len(ents))
	}
}

func TestLoadRejectsEscapingEntries(t *testing.T) {
	manifest := graphtest.TarEntry{Name: "manifest.json", Body: `[]`}
	tests := []struct {
		name  string
		entry graphtest.TarEntry
	}{
		{"dotdot", graphtest.TarEntry{Name: "../evil", Body: "x"}},
		{"nested dotdot", graphtest.TarEntry{Name: "blobs/../../evil", Body: "x"}},
		{"absolute", graphtest.TarEntry{Name: "/tmp/evil", Body: "x"}},
		{"symlink dotdot", graphtest.TarEntry{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"}},
		{"symlink absolute", graphtest.TarEntry{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}},
		{"symlink nested escape", graphtest.TarEntry{Name: "a/link", Typeflag: tar.TypeSymlink, Linkname: "../../x"}},
		{"hardlink dotdot", graphtest.TarEntry{Name: "link", Typeflag: tar.TypeLink, Linkname: "../x"}},
		{"hardlink absolute", graphtest.TarEntry{Name: "link", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "root")
			s, _ := openLocalTestStore(t, root)
			b := graphtest.Tar(t, tt.entry, graphtest.TarEntry{Name: "evil", Body: "payload"}, manifest)
			_, err := loadBytes(t, s, b)
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("err = %v, want InvalidArgument", err)
			}
			ents, _ := os.ReadDir(parent)
			if len(ents) != 1 || ents[0].Name() != "root" {
				t.Fatalf("something was written beside the root: %v", ents)
			}
			if _, err := os.Stat("/tmp/evil"); err == nil {
				t.Fatal("/tmp/evil exists")
			}
			assertNoBlobs(t, s)
		})
	}
}

func TestLoadInsideSymlinkAccepted(t *testing.T) {
	// A symlink that stays inside the archive (docker save's shared layers)
	// is followed; covered by the legacy fixture's dup/layer.tar.
	s, _ := newLocalTestStore(t)
	b, _ := legacyTar(t, nil)
	if _, err := loadBytes(t, s, b); err != nil {
		t.Fatal(err)
	}
}

func FuzzLoadArchive(f *testing.F) {
	seedStore, _ := newLocalTestStore(f)
	graphtest.ImportImage(f, seedStore, "seed:1", "seed", "LABEL a=b")
	var saved bytes.Buffer
	if err := seedStore.ExportImage(context.Background(), []string{"seed:1"}, nil, &saved); err != nil {
		f.Fatal(err)
	}
	f.Add(saved.Bytes())
	f.Add(graphtest.Tar(f, graphtest.TarEntry{Name: "manifest.json", Body: `[{"Config":"c.json","Layers":["l/layer.tar"]}]`},
		graphtest.TarEntry{Name: "c.json", Body: `{"rootfs":{"diff_ids":[]}}`}))
	f.Add(graphtest.Tar(f, graphtest.TarEntry{Name: "index.json", Body: `{"manifests":[{"digest":"sha256:../../x"}]}`}))
	f.Add(graphtest.Tar(f, graphtest.TarEntry{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "l"}, graphtest.TarEntry{Name: "manifest.json", Body: `[{"Config":"l"}]`}))
	f.Add([]byte("garbage"))
	s, _ := newLocalTestStore(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = s.LoadImage(context.Background(), bytes.NewReader(b), true, nil, types.DiscardProgress)
	})
}

func TestLoadProgressUnlessQuiet(t *testing.T) {
	src, _ := newLocalTestStore(t)
	graphtest.ImportImage(t, src, "p:1", "p")
	b := saveToBytes(t, src, "p:1")
	for _, quiet := range []bool{true, false} {
		dst, _ := newLocalTestStore(t)
		var msgs []string
		out := types.ProgressFunc(func(m jsonstream.Message) error { msgs = append(msgs, m.Status+m.Stream); return nil })
		if err := dst.LoadImage(context.Background(), bytes.NewReader(b), quiet, nil, out); err != nil {
			t.Fatal(err)
		}
		want := "[Loaded image: p:1\n]"
		if !quiet {
			want = "[Loading layer Loaded image: p:1\n]"
		}
		if fmt.Sprint(msgs) != want {
			t.Fatalf("quiet=%v: %q", quiet, msgs)
		}
	}
}
