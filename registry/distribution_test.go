package registry

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

func TestAgainstDistributionRegistry(t *testing.T) {
	// The real registry, started the one way the tests start it.
	addr := startTestRegistry(t, testregistry.Options{}).Host
	ctx := context.Background()
	s := testService(t, ServiceOptions{})
	r := mustRepo(t, s, addr+"/real/app")

	push := func(mt string, b []byte) ocispec.Descriptor {
		t.Helper()
		d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if _, _, err := r.TransferBlob(ctx, d, nil, opener(b)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	var entries []ocispec.Descriptor
	for _, arch := range []string{"amd64", "arm64"} {
		cfg := push(ocispec.MediaTypeImageConfig, []byte(`{"architecture":"`+arch+`","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`))
		layer := push(ocispec.MediaTypeImageLayerGzip, []byte("layer "+arch))
		m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: []ocispec.Descriptor{layer}}
		m.SchemaVersion = 2
		mb, _ := json.Marshal(m)
		md := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(mb), Size: int64(len(mb))}
		if err := r.PushManifest(ctx, md, mb, "single-"+arch); err != nil {
			t.Fatal(err)
		}
		md.Platform = &ocispec.Platform{OS: "linux", Architecture: arch}
		entries = append(entries, md)
	}
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: entries}
	idx.SchemaVersion = 2
	ib, _ := json.Marshal(idx)
	id := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(ib), Size: int64(len(ib))}
	if err := r.PushManifest(ctx, id, ib, "multi"); err != nil {
		t.Fatal(err)
	}

	// A fresh service: nothing cached.
	s2 := testService(t, ServiceOptions{})
	img, err := s2.Inspect(ctx, InspectRequest{Name: addr + "/real/app:multi", Platform: ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}})
	if err != nil {
		t.Fatal(err)
	}
	if img.Descriptor.Digest != id.Digest || img.Manifest.Digest != entries[1].Digest || img.Index == nil {
		t.Errorf("multi: top %s manifest %s", img.Descriptor.Digest, img.Manifest.Digest)
	}
	d, err := mustRepo(t, s2, addr+"/real/app").Descriptor(ctx, "single-amd64")
	if err != nil || d.Digest != entries[0].Digest {
		t.Errorf("Descriptor single-amd64 = %v %v", d.Digest, err)
	}
	tags, err := mustRepo(t, s2, addr+"/real/app").Tags(ctx, TagsOptions{})
	if err != nil || len(tags) != 3 {
		t.Errorf("tags %v %v", tags, err)
	}
	_, err = s2.Inspect(ctx, InspectRequest{Name: addr + "/real/app:nope", Platform: linuxAmd64()})
	if !errdefs.IsNotFound(err) {
		t.Errorf("missing tag: %v, want NotFound", err)
	}
	t.Logf("missing tag: %v", err)
}
