package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// startDistribution runs the real CNCF registry built to .cache/bin, or
// skips when it is not there.
func startDistribution(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", ".cache", "bin", "registry")
	if _, err := os.Stat(bin); err != nil {
		t.Skip("distribution registry binary not built (.cache/bin/registry)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling readiness of a child process
	}
}

func TestAgainstDistributionRegistry(t *testing.T) {
	addr := startDistribution(t)
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
