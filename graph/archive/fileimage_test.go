package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/ocilayout"
)

var amd64 = ocispec.Platform{OS: "linux", Architecture: "amd64"}

// layerTar is an uncompressed layer holding one file.
func layerTar(t testing.TB, name, body string) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	return b.Bytes()
}

func writeFile(t testing.TB, b []byte) string {
	p := filepath.Join(t.TempDir(), "a.tar")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ociArchive is an OCI layout tar of one image of the given layers; with
// platforms, an index of one such image per platform.
func ociArchive(t testing.TB, layers [][]byte, platforms ...ocispec.Platform) ([]byte, []ocispec.Descriptor) {
	var out bytes.Buffer
	w := ocilayout.NewWriter(&out, time.Unix(0, 0), tar.FormatPAX)
	ctx := context.Background()
	put := func(mt string, b []byte) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := w.Blob(ctx, d.Digest, d.Size, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if len(platforms) == 0 {
		platforms = []ocispec.Platform{amd64}
	}
	var mans []ocispec.Descriptor
	for i, p := range platforms {
		cfg := ocispec.Image{Platform: p, RootFS: ocispec.RootFS{Type: "layers"}}
		m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest}
		m.SchemaVersion = 2
		for _, l := range layers {
			l = append(append([]byte(nil), l...), byte(i)) // each platform's own bytes
			m.Layers = append(m.Layers, put(ocispec.MediaTypeImageLayer, l))
			cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, digest.FromBytes(l))
		}
		cb, _ := json.Marshal(cfg)
		m.Config = put(ocispec.MediaTypeImageConfig, cb)
		mb, _ := json.Marshal(m)
		d := put(ocispec.MediaTypeImageManifest, mb)
		pl := p
		d.Platform = &pl
		mans = append(mans, d)
	}
	top := mans
	if len(platforms) > 1 {
		ix := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: mans}
		ix.SchemaVersion = 2
		ib, _ := json.Marshal(ix)
		top = []ocispec.Descriptor{put(ocispec.MediaTypeImageIndex, ib)}
	}
	idx := ocispec.Index{Manifests: top}
	idx.SchemaVersion = 2
	if err := w.Layout(); err != nil {
		t.Fatal(err)
	}
	if err := w.Index(idx); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	return out.Bytes(), mans
}

// dockerArchive is a docker save of one image, each layer "<n>/layer.tar".
func dockerArchive(t testing.TB, layers [][]byte) []byte {
	var out bytes.Buffer
	w := ocilayout.NewWriter(&out, time.Unix(0, 0), tar.FormatPAX)
	cfg := ocispec.Image{Platform: amd64, RootFS: ocispec.RootFS{Type: "layers"}}
	var names []string
	for i, l := range layers {
		name := string(rune('a'+i)) + "/layer.tar"
		if err := w.File(name, l); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, digest.FromBytes(l))
	}
	cb, _ := json.Marshal(cfg)
	_ = w.File("config.json", cb)
	_ = w.JSON("manifest.json", []map[string]any{{"Config": "config.json", "RepoTags": []string{"app:1"}, "Layers": names}})
	_ = w.Close()
	return out.Bytes()
}

func readAll(t testing.TB, fi *FileImage, i int) ([]byte, error) {
	rc, err := fi.Blobs.Open(context.Background(), fi.Layers[i])
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func TestFileImageReadsOCIAndDockerArchivesInPlace(t *testing.T) {
	l0, l1 := layerTar(t, "etc/a", "a"), layerTar(t, "etc/b", "bb")
	oci, mans := ociArchive(t, [][]byte{l0, l1})
	for _, tc := range []struct {
		name string
		b    []byte
	}{{"oci", oci}, {"docker", dockerArchive(t, [][]byte{l0, l1})}} {
		t.Run(tc.name, func(t *testing.T) {
			fi, err := openFileImage(context.Background(), writeFile(t, tc.b), amd64)
			if err != nil {
				t.Fatal(err)
			}
			defer fi.Close()
			if len(fi.Layers) != 2 || fi.ConfigDescriptor.Digest != digest.FromBytes(fi.Config) {
				t.Fatalf("%d layers, config %s", len(fi.Layers), fi.ConfigDescriptor.Digest)
			}
			if tc.name == "oci" && fi.Manifest.Digest != mans[0].Digest {
				t.Fatalf("manifest %s, want %s", fi.Manifest.Digest, mans[0].Digest)
			}
			b, err := readAll(t, fi, 1)
			if err != nil || len(b) != int(fi.Layers[1].Size) {
				t.Fatalf("layer 1: %d bytes, %v", len(b), err)
			}
			rc, err := fi.Blobs.ReadRange(context.Background(), fi.Layers[1], 512, 2)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			if tc.name == "docker" && string(got) != "bb" {
				t.Fatalf("range %q, want the file's bytes", got)
			}
			if _, err := fi.Blobs.ReadRange(context.Background(), fi.Layers[1], 0, fi.Layers[1].Size+1); !errdefs.IsInvalidArgument(err) {
				t.Fatalf("a range past the end: %v", err)
			}
		})
	}
}

func TestFileImageChoosesThePlatform(t *testing.T) {
	arm := ocispec.Platform{OS: "linux", Architecture: "arm64"}
	b, mans := ociArchive(t, [][]byte{layerTar(t, "x", "x")}, amd64, arm)
	p := writeFile(t, b)
	for i, want := range []ocispec.Platform{amd64, arm} {
		fi, err := openFileImage(context.Background(), p, want)
		if err != nil {
			t.Fatal(err)
		}
		fi.Close()
		if fi.Manifest.Digest != mans[i].Digest {
			t.Fatalf("%s: manifest %s, want %s", want.Architecture, fi.Manifest.Digest, mans[i].Digest)
		}
	}
	if _, err := openFileImage(context.Background(), p, ocispec.Platform{OS: "linux", Architecture: "s390x"}); !errdefs.IsNotFound(err) {
		t.Fatalf("a platform the archive lacks: %v", err)
	}
}

func TestFileImageRefuses(t *testing.T) {
	l := layerTar(t, "x", "x")
	good := dockerArchive(t, [][]byte{l})
	tampered := bytes.Replace(good, l[512:513], []byte("y"), 1)
	two := func() []byte {
		var out bytes.Buffer
		w := ocilayout.NewWriter(&out, time.Unix(0, 0), tar.FormatPAX)
		_ = w.JSON("manifest.json", []map[string]any{{"Config": "c"}, {"Config": "d"}})
		_ = w.Close()
		return out.Bytes()
	}()
	for _, tc := range []struct {
		name  string
		path  string
		class func(error) bool
	}{
		{"a relative path", "a.tar", errdefs.IsInvalidArgument},
		{"no file", filepath.Join(t.TempDir(), "none.tar"), errdefs.IsNotFound},
		{"gzip", writeFile(t, []byte{0x1f, 0x8b, 8, 0}), errdefs.IsInvalidArgument},
		{"not a tar", writeFile(t, bytes.Repeat([]byte("x"), 1024)), errdefs.IsInvalidArgument},
		{"two images", writeFile(t, two), errdefs.IsInvalidArgument},
	} {
		if _, err := openFileImage(context.Background(), tc.path, amd64); !tc.class(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	fi, err := openFileImage(context.Background(), writeFile(t, tampered), amd64)
	if err != nil {
		t.Fatal(err)
	}
	defer fi.Close()
	if _, err := readAll(t, fi, 0); !errors.Is(err, errdefs.ErrDataLoss) {
		t.Fatalf("a layer whose bytes changed: %v", err)
	}
}

// An archive is the caller's file: any bytes open or fail, never panic,
// and every layer handed out reads within the file.
func FuzzOpenFileImage(f *testing.F) {
	l := layerTar(f, "x", "x")
	oci, _ := ociArchive(f, [][]byte{l})
	f.Add(oci)
	f.Add(dockerArchive(f, [][]byte{l}))
	f.Fuzz(func(t *testing.T, b []byte) {
		fi, err := readFileImage(context.Background(), bytes.NewReader(b), func() error { return nil }, amd64)
		if err != nil {
			return
		}
		defer fi.Close()
		for i := range fi.Layers {
			_, _ = readAll(t, fi, i)
		}
	})
}
