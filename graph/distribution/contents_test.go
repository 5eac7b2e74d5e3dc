package distribution

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
	"github.com/wharfproject/wharf/registry"
)

// TestRemoteLayersOnTokenRegistry: a name resolves with the caller's
// credentials to its manifest's layers and diff IDs; the blobs read from
// that repository (whole and verified, or one range per read), and from
// the store's file once the layer is stored: no blob request then. A
// missing tag is "No such image"; no credentials, no layers.
func TestRemoteLayersOnTokenRegistry(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{Auth: testregistry.AuthToken})
	ctx := context.Background()
	img, err := testregistry.NewImage(testregistry.ImageOptions{Layers: 2, LayerSize: 200 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Client().PushImage(ctx, "contents/app", "1.0", img); err != nil {
		t.Fatal(err)
	}
	svc, err := registry.NewService(registry.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := graphtest.OpenStore(t, t.TempDir())
	s := New(st, Options{Registry: svc, Platform: img.Platform})
	auth := &registrytypes.AuthConfig{Username: reg.Username, Password: reg.Password, ServerAddress: reg.Host}
	name := reg.Host + "/contents/app"

	rl, err := s.RemoteLayers(ctx, name+":1.0", types.FilesOptions{Remote: true, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	if rl.Manifest.Digest.String() != img.Manifest.Digest || len(rl.Layers) != 2 || len(rl.DiffIDs) != 2 {
		t.Fatalf("manifest %s, %d layers, %d diff IDs", rl.Manifest.Digest, len(rl.Layers), len(rl.DiffIDs))
	}
	for i, l := range img.Layers {
		if rl.Layers[i].Digest.String() != l.Digest || rl.DiffIDs[i].String() != img.DiffIDs[i] {
			t.Fatalf("layer %d: %s / %s", i, rl.Layers[i].Digest, rl.DiffIDs[i])
		}
	}
	bottom, data := rl.Layers[0], img.Layers[0].Data

	reg.ResetCounters()
	if rl.Blobs.Local(bottom) {
		t.Fatal("local before it is stored")
	}
	rc, err := rl.Blobs.ReadRange(ctx, bottom, 1000, 500)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data[1000:1500]) {
		t.Fatalf("range: %d bytes, %v", len(got), err)
	}
	rc, err = rl.Blobs.Open(ctx, bottom)
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("whole: %d bytes, %v", len(got), err)
	}
	if n := reg.Counter.Count("GET blobs"); n != 2 {
		t.Fatalf("%d blob GETs for one range and one whole read (%s)", n, reg.Counter.Summary())
	}

	l := st.NewLease()
	defer l.Release()
	if _, err := l.WriteBlob(ctx, bottom, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	reg.ResetCounters()
	if !rl.Blobs.Local(bottom) {
		t.Fatal("not local once stored")
	}
	rc, err = rl.Blobs.ReadRange(ctx, bottom, 1000, 500)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(rc)
	rc.Close()
	rc, err = rl.Blobs.Open(ctx, bottom)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, data[1000:1500]) || !bytes.Equal(whole, data) || reg.Counter.Total() != 0 {
		t.Fatalf("stored layer: range equal %v, whole equal %v, %d requests", bytes.Equal(got, data[1000:1500]), bytes.Equal(whole, data), reg.Counter.Total())
	}
	if _, err := rl.Blobs.ReadRange(ctx, bottom, bottom.Size-10, 11); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("a range past the end: %v", err)
	}

	if _, err := s.RemoteLayers(ctx, name+":nope", types.FilesOptions{Remote: true, Auth: auth}); !errdefs.IsNotFound(err) || err.Error() != "No such image: "+name+":nope" {
		t.Fatalf("missing tag: %v", err)
	}
	if _, err := s.RemoteLayers(ctx, name+":1.0", types.FilesOptions{Remote: true}); err == nil {
		t.Fatal("anonymous caller got the layers of a private repository")
	}
	other := ocispec.Descriptor{MediaType: bottom.MediaType, Digest: digest.FromString("absent"), Size: 10}
	if _, err := rl.Blobs.ReadRange(ctx, other, 0, 10); !errdefs.IsNotFound(err) && !errors.Is(err, registry.ErrUpstream) {
		t.Fatalf("absent blob: %v", err)
	}
}

// TestRemoteLayersRefusesSchema1: a schema1 image has no layer digests a
// contents read could index: not implemented, said so, no blob read.
func TestRemoteLayersRefusesSchema1(t *testing.T) {
	reg, err := hostile.Start(hostile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	v1c := `{"id":"abc","architecture":"amd64","os":"linux"}`
	body, _ := json.Marshal(map[string]any{
		"schemaVersion": 1, "name": reg.Repo, "tag": reg.Tag, "architecture": "amd64",
		"fsLayers": []map[string]string{{"blobSum": digest.FromString("top").String()}},
		"history":  []map[string]string{{"v1Compatibility": v1c}},
	})
	reg.ServeManifest(imagespec.MediaTypeDockerSchema1, body)
	svc, err := registry.NewService(registry.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := New(graphtest.OpenStore(t, t.TempDir()), Options{Registry: svc, Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}})
	_, err = s.RemoteLayers(context.Background(), reg.Ref(), types.FilesOptions{Remote: true})
	if !errdefs.IsNotImplemented(err) || !strings.Contains(err.Error(), "schema1") {
		t.Fatalf("schema1: %v", err)
	}
	if n := reg.Count(hostile.KindBlob); n != 0 {
		t.Fatalf("%d blob requests", n)
	}
}
