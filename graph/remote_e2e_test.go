package graph

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/internal/imageref"
	"github.com/wharfproject/wharf/internal/testregistry"
	"github.com/wharfproject/wharf/registry"
)

func newRemoteTestStore(t *testing.T) (*Service, *graphtest.EventRecorder) {
	t.Helper()
	svc, err := registry.NewService(registry.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return openTestStore(t, Options{Root: t.TempDir(), Registry: svc})
}

// sharedInspectJSON is the JSON of the fields local and remote inspect
// must agree on: everything but the local-only GraphDriver and Metadata.
func sharedInspectJSON(t *testing.T, in types.ImageInspect) string {
	t.Helper()
	r := in.InspectResponse
	r.GraphDriver = nil
	r.Metadata = image.Metadata{}
	return graphtest.JSONText(t, r)
}

// TestRemoteRoundTrip: import → push → inspect remotely (equal to local) →
// rmi → pull → same ID; then pull a fixture, pull again, and push it to a
// second repository of the same registry (layers mounted).
func TestRemoteRoundTrip(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{})
	s, ev := newRemoteTestStore(t)
	ctx := context.Background()
	host := reg.Host

	rootfs := graphtest.Tar(t, graphtest.TarEntry{Name: "bin/", Typeflag: tar.TypeDir}, graphtest.TarEntry{Name: "bin/sh", Body: strings.Repeat("#!", 4096)})
	name := host + "/team/imp"
	if err := s.ImportImage(ctx, bytes.NewReader(rootfs), types.ImportOptions{Repo: name + ":1.0", Changes: []string{`LABEL a=b`}}, types.DiscardProgress); err != nil {
		t.Fatal(err)
	}
	local, err := s.images.Lookup(name + ":1.0")
	if err != nil {
		t.Fatal(err)
	}

	var push graphtest.Messages
	if err := s.PushImage(ctx, types.PushOptions{Repo: mustNamed(t, name), Tag: "1.0"}, &push); err != nil {
		t.Fatalf("push: %v\n%s", err, &push)
	}
	if push.At(0).Status != "The push refers to repository ["+name+"]" {
		t.Fatalf("first push message %+v", push.At(0))
	}
	aux := push.Last()
	var res types.PushResult
	if aux.Aux == nil || json.Unmarshal(*aux.Aux, &res) != nil || res.Tag != "1.0" || !strings.HasPrefix(res.Digest, "sha256:") || res.Size <= 0 {
		t.Fatalf("push aux %+v\n%s", aux, &push)
	}
	if st := push.At(-2).Status; st != "1.0: digest: "+res.Digest+" size: "+itoa(res.Size) {
		t.Fatalf("push status %q", st)
	}
	layerID := ""
	for _, m := range push.All() {
		if m.Status == "Preparing" {
			layerID = m.ID
		}
	}
	if layerID == "" || !push.Has(layerID, "Pushed") {
		t.Fatalf("layer not reported pushed:\n%s", &push)
	}

	localInsp, err := s.ImageInspect(ctx, name+":1.0", types.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantDigest := name + "@" + res.Digest
	if !containsString(localInsp.RepoDigests, wantDigest) {
		t.Fatalf("local RepoDigests %v lack %s", localInsp.RepoDigests, wantDigest)
	}
	remote, err := s.LookupRemote(ctx, name+":1.0", types.RemoteInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if remote.Registry != host || remote.Digest != res.Digest || remote.Tag != "1.0" || remote.PlatformManifestDigest != res.Digest {
		t.Fatalf("remote extras: registry %q digest %q tag %q platform %q", remote.Registry, remote.Digest, remote.Tag, remote.PlatformManifestDigest)
	}
	if got, want := sharedInspectJSON(t, remote.ImageInspect), sharedInspectJSON(t, *localInsp); got != want {
		t.Fatalf("remote and local inspect differ:\nremote %s\nlocal  %s", got, want)
	}

	// rmi → pull → same image.
	if _, err := s.ImageDelete(ctx, name+":1.0", true, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.images.Lookup(name + ":1.0"); !errdefs.IsNotFound(err) {
		t.Fatalf("after rmi: %v", err)
	}
	var pull graphtest.Messages
	if err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name, "1.0")}, &pull); err != nil {
		t.Fatalf("pull: %v\n%s", err, &pull)
	}
	back, err := s.images.Lookup(name + ":1.0")
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != local.ID {
		t.Fatalf("pulled ID %s, imported %s", back.ID, local.ID)
	}
	if pull.At(0).Status != "Pulling from team/imp" || pull.At(0).ID != "1.0" ||
		pull.Last().Status != "Status: Downloaded newer image for "+name+":1.0" ||
		!pull.Has("", "Digest: "+res.Digest) {
		t.Fatalf("pull stream:\n%s", &pull)
	}
	for _, want := range []string{"push", "inspect", "pull"} {
		if !strings.Contains(","+strings.Join(ev.Actions(), ",")+",", ","+want+",") {
			t.Fatalf("events %v lack %s", ev.Actions(), want)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestRemotePullFixtureAndMountPush(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{})
	s, _ := newRemoteTestStore(t)
	ctx := context.Background()
	img, err := testregistry.NewImage(testregistry.ImageOptions{Docker: true, Layers: 3, LayerSize: 600 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Client().PushImage(ctx, "src/app", "1.0", img); err != nil {
		t.Fatal(err)
	}
	name := reg.Host + "/src/app"

	var first graphtest.Messages
	if err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name+":1.0", "")}, &first); err != nil {
		t.Fatalf("pull: %v\n%s", err, &first)
	}
	for _, l := range img.Layers {
		id := l.Digest[len("sha256:"):][:12]
		for _, st := range []string{"Pulling fs layer", "Verifying Checksum", "Download complete", "Pull complete"} {
			if !first.Has(id, st) {
				t.Fatalf("layer %s: no %q\n%s", id, st, &first)
			}
		}
	}
	rec, err := s.images.Lookup(name + ":1.0")
	if err != nil || rec.ID.String() != img.ID() {
		t.Fatalf("lookup after pull: %v %v, want ID %s", rec, err, img.ID())
	}

	var again graphtest.Messages
	if err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name, "1.0")}, &again); err != nil {
		t.Fatal(err)
	}
	if again.Len() != 3 || again.Last().Status != "Status: Image is up to date for "+name+":1.0" {
		t.Fatalf("second pull:\n%s", &again)
	}

	// By digest: the id of "Pulling from" is the whole reference.
	var byDigest graphtest.Messages
	if err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name, img.Manifest.Digest)}, &byDigest); err != nil {
		t.Fatal(err)
	}
	if byDigest.At(0).ID != name+"@"+img.Manifest.Digest || byDigest.Last().Status != "Status: Image is up to date for "+name+"@"+img.Manifest.Digest {
		t.Fatalf("pull by digest:\n%s", &byDigest)
	}

	if err := tagAs(ctx, s, name+":1.0", reg.Host+"/other/app", "2.0"); err != nil {
		t.Fatal(err)
	}
	var push graphtest.Messages
	if err := s.PushImage(ctx, types.PushOptions{Repo: mustNamed(t, reg.Host+"/other/app:ignored"), Tag: "2.0"}, &push); err != nil {
		t.Fatalf("push: %v\n%s", err, &push)
	}
	for _, l := range img.Layers {
		if id := l.Digest[len("sha256:"):][:12]; !push.Has(id, "Mounted from src/app") {
			t.Fatalf("layer %s not mounted:\n%s", id, &push)
		}
	}
	// The manifest is pushed byte for byte: same digest in the new repository.
	if st := push.At(-2).Status; !strings.HasPrefix(st, "2.0: digest: "+img.Manifest.Digest+" size: ") {
		t.Fatalf("push status %q, want digest %s", st, img.Manifest.Digest)
	}
	var pushAgain graphtest.Messages
	if err := s.PushImage(ctx, types.PushOptions{Repo: mustNamed(t, reg.Host+"/other/app")}, &pushAgain); err != nil {
		t.Fatalf("push pushAgain: %v\n%s", err, &pushAgain)
	}
	for _, l := range img.Layers {
		if id := l.Digest[len("sha256:"):][:12]; !pushAgain.Has(id, "Layer already exists") {
			t.Fatalf("layer %s not reported existing:\n%s", id, &pushAgain)
		}
	}
}

func TestRemoteErrors(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{})
	s, _ := newRemoteTestStore(t)
	ctx := context.Background()
	img, err := testregistry.NewImage(testregistry.ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Client().PushImage(ctx, "tiny", "1.0", img); err != nil {
		t.Fatal(err)
	}
	name := reg.Host + "/tiny"

	for _, tc := range []struct{ from, tag, want string }{
		{name, "nope", "manifest for " + name + ":nope not found: "},
		{reg.Host + "/nosuchrepo", "1.0", "manifest for " + reg.Host + "/nosuchrepo:1.0 not found: "},
	} {
		var out graphtest.Messages
		err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, tc.from, tc.tag)}, &out)
		if !errdefs.IsNotFound(err) || !strings.HasPrefix(err.Error(), tc.want) || out.Len() != 0 {
			t.Errorf("pull %s:%s: err %v, %d messages; want NotFound %q before any message", tc.from, tc.tag, err, out.Len(), tc.want)
		}
	}
	if _, err := s.LookupRemote(ctx, name+":nope", types.RemoteInspectOptions{}); !errdefs.IsNotFound(err) || err.Error() != "No such image: "+name+":nope" {
		t.Errorf("remote inspect of a missing tag: %v", err)
	}
	if _, err := imageref.ForPull("scratch", ""); !errdefs.IsPermissionDenied(err) || err.Error() != "'scratch' is a reserved name" {
		t.Errorf("pull scratch: %v", err)
	}
	var arm graphtest.Messages
	err = s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name, "1.0"), Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"}}, &arm)
	if err == nil || !strings.Contains(err.Error(), "does not match the specified platform (linux/arm64)") {
		t.Errorf("pull of an amd64-only image for arm64: %v\n%s", err, &arm)
	}
	var push graphtest.Messages
	err = s.PushImage(ctx, types.PushOptions{Repo: mustNamed(t, reg.Host+"/nosuchlocal"), Tag: "1.0"}, &push)
	if !errdefs.IsNotFound(err) || err.Error() != "An image does not exist locally with the tag: "+reg.Host+"/nosuchlocal" ||
		push.Len() != 1 || push.At(0).Status != "The push refers to repository ["+reg.Host+"/nosuchlocal]" {
		t.Errorf("push missing: %v\n%s", err, &push)
	}

	di, err := s.DistributionInspect(ctx, name+":1.0", types.RemoteInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if di.Descriptor.Digest.String() != img.Manifest.Digest || di.Descriptor.Size != int64(len(img.Manifest.Data)) ||
		di.Descriptor.MediaType != img.Manifest.MediaType || len(di.Platforms) != 1 || di.Platforms[0].Architecture != "amd64" {
		t.Fatalf("distribution inspect %+v", di)
	}
	raw, desc, err := s.RemoteManifest(ctx, name+":1.0", types.RemoteInspectOptions{})
	if err != nil || !bytes.Equal(raw, img.Manifest.Data) || desc.MediaType != img.Manifest.MediaType || desc.Digest.String() != img.Manifest.Digest {
		t.Fatalf("raw manifest: %v %+v", err, desc)
	}
}

func TestRemoteIndex(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{})
	s, _ := newRemoteTestStore(t)
	ctx := context.Background()
	ix, err := testregistry.NewIndex(testregistry.IndexOptions{Attestation: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Client().PushIndex(ctx, "multi", "1.0", ix); err != nil {
		t.Fatal(err)
	}
	name := reg.Host + "/multi"

	ri, err := s.LookupRemote(ctx, name+":1.0", types.RemoteInspectOptions{InspectOptions: types.InspectOptions{Manifests: true}})
	if err != nil {
		t.Fatal(err)
	}
	if ri.Digest != ix.Digest() || ri.PlatformManifestDigest != ix.Images[0].Manifest.Digest || ri.ID != ix.Images[0].ID() {
		t.Fatalf("remote index inspect: digest %s platform %s id %s", ri.Digest, ri.PlatformManifestDigest, ri.ID)
	}
	kinds := []string{}
	for _, m := range ri.Manifests {
		kinds = append(kinds, string(m.Kind))
		if m.Available {
			t.Fatalf("remote manifest %s reported available", m.ID)
		}
	}
	if strings.Join(kinds, ",") != "image,image,attestation" || ri.Manifests[2].AttestationData.For.String() != ix.Images[0].Manifest.Digest {
		t.Fatalf("manifests %+v", ri.Manifests)
	}

	di, err := s.DistributionInspect(ctx, name+":1.0", types.RemoteInspectOptions{})
	if err != nil || di.Descriptor.MediaType != ocispec.MediaTypeImageIndex || len(di.Platforms) != 3 {
		t.Fatalf("distribution inspect %+v %v", di, err)
	}

	arm := &ocispec.Platform{OS: "linux", Architecture: "arm64"}
	var pull graphtest.Messages
	if err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name, "1.0"), Platform: arm}, &pull); err != nil {
		t.Fatalf("pull arm64: %v\n%s", err, &pull)
	}
	rec, err := s.images.Lookup(name + ":1.0")
	if err != nil || rec.ID.String() != ix.Images[1].ID() || rec.Target.Digest.String() != ix.Digest() {
		t.Fatalf("pulled %+v %v; want ID %s target %s", rec, err, ix.Images[1].ID(), ix.Digest())
	}

	var bad graphtest.Messages
	err = s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name, "1.0"), Platform: &ocispec.Platform{OS: "windows", Architecture: "s390x"}}, &bad)
	if err == nil || !strings.HasPrefix(err.Error(), "no matching manifest for windows/s390x") || bad.Len() != 1 {
		t.Fatalf("bad platform: %v\n%s", err, &bad)
	}

	// Only arm64 is stored, so the push sends its manifest, not the index.
	if err := tagAs(ctx, s, name+":1.0", reg.Host+"/multi2", "x"); err != nil {
		t.Fatal(err)
	}
	var push graphtest.Messages
	if err := s.PushImage(ctx, types.PushOptions{Repo: mustNamed(t, reg.Host+"/multi2"), Tag: "x"}, &push); err != nil {
		t.Fatalf("push: %v\n%s", err, &push)
	}
	if st := push.At(-2).Status; !strings.HasPrefix(st, "x: digest: "+ix.Images[1].Manifest.Digest) {
		t.Fatalf("push of a partial index: %q", st)
	}
}

// TestRemotePullStreamsLayers: a pull allocates far less than the layer
// it stores, so layers are streamed to disk, never held whole in memory.
func TestRemotePullStreamsLayers(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{})
	s, _ := newRemoteTestStore(t)
	ctx := context.Background()
	const layerSize = 24 << 20
	img, err := testregistry.NewImage(testregistry.ImageOptions{LayerSize: layerSize})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Client().PushImage(ctx, "big", "1.0", img); err != nil {
		t.Fatal(err)
	}
	img.Layers = nil // let the fixture's bytes go before measuring
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, reg.Host+"/big", "1.0")}, types.DiscardProgress); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > layerSize/3 {
		t.Fatalf("pull of a %d MiB layer allocated %d MiB", layerSize>>20, alloc>>20)
	}
}

// TestRemotePushWholeIndex: once every platform of an index is stored, a
// push sends the index itself, so NAME@digest pins the same multi-platform
// image in the new repository.
func TestRemotePushWholeIndex(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{})
	s, _ := newRemoteTestStore(t)
	ctx := context.Background()
	ix, err := testregistry.NewIndex(testregistry.IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Client().PushIndex(ctx, "multi", "1.0", ix); err != nil {
		t.Fatal(err)
	}
	name := reg.Host + "/multi"
	for _, p := range []ocispec.Platform{{OS: "linux", Architecture: "arm64"}, {OS: "linux", Architecture: "amd64"}} {
		if err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name, "1.0"), Platform: &p}, types.DiscardProgress); err != nil {
			t.Fatal(err)
		}
	}
	if err := tagAs(ctx, s, name+":1.0", reg.Host+"/copy", "1.0"); err != nil {
		t.Fatal(err)
	}
	var push graphtest.Messages
	if err := s.PushImage(ctx, types.PushOptions{Repo: mustNamed(t, reg.Host+"/copy"), Tag: "1.0"}, &push); err != nil {
		t.Fatalf("push: %v\n%s", err, &push)
	}
	if st := push.At(-2).Status; st != "1.0: digest: "+ix.Digest()+" size: "+itoa(len(ix.Index.Data)) {
		t.Fatalf("push status %q, want the index %s", st, ix.Digest())
	}
	for _, img := range ix.Images {
		if id := img.Layers[0].Digest[len("sha256:"):][:12]; !push.Has(id, "Mounted from multi") {
			t.Fatalf("layer %s of %s not mounted:\n%s", id, img.Platform.Architecture, &push)
		}
	}
	ri, err := s.LookupRemote(ctx, reg.Host+"/copy:1.0", types.RemoteInspectOptions{InspectOptions: types.InspectOptions{Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"}}})
	if err != nil || ri.Digest != ix.Digest() || ri.ID != ix.Images[1].ID() {
		t.Fatalf("remote inspect of the pushed index: %v %+v", err, ri)
	}
}

// TestRemotePullAllTags: no tag anywhere pulls every tag of the repository.
func TestRemotePullAllTags(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{})
	s, _ := newRemoteTestStore(t)
	ctx := context.Background()
	for _, tag := range []string{"1.0", "2.0"} {
		img, err := testregistry.NewImage(testregistry.ImageOptions{Labels: map[string]string{"tag": tag}})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Client().PushImage(ctx, "many", tag, img); err != nil {
			t.Fatal(err)
		}
	}
	name := reg.Host + "/many"
	var out graphtest.Messages
	if err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name+":", "")}, &out); err != nil {
		t.Fatalf("pull -a: %v\n%s", err, &out)
	}
	for _, tag := range []string{"1.0", "2.0"} {
		if _, err := s.images.Lookup(name + ":" + tag); err != nil {
			t.Fatalf("%s not pulled: %v", tag, err)
		}
		if !out.Has(tag, "Pulling from many") {
			t.Fatalf("no Pulling from for %s:\n%s", tag, &out)
		}
	}
	if out.Last().Status != "Status: Downloaded newer image for "+name {
		t.Fatalf("final status %q", out.Last().Status)
	}
}

// TestRemoteFailedPullLeavesNoImage: a layer that fails verification ends
// the pull in-stream; no image appears and, since the pull's lease is
// released with nothing recording its blobs, no blob stays behind either
// (the verified layer too: a failed pull leaves no orphans). The next pull
// fetches the image whole.
func TestRemoteFailedPullLeavesNoImage(t *testing.T) {
	reg := testregistry.StartForTest(t, testregistry.Options{})
	s, _ := newRemoteTestStore(t)
	ctx := context.Background()
	img, err := testregistry.NewImage(testregistry.ImageOptions{Layers: 2, LayerSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Client().PushImage(ctx, "broken", "1.0", img); err != nil {
		t.Fatal(err)
	}
	good, bad := img.Layers[0], img.Layers[1]
	if err := reg.CorruptBlob(bad.Digest); err != nil {
		t.Fatal(err)
	}
	name := reg.Host + "/broken"
	var out graphtest.Messages
	if err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name, "1.0")}, &out); err == nil {
		t.Fatalf("pull of a corrupt layer succeeded:\n%s", &out)
	}
	if _, err := s.images.Lookup(name + ":1.0"); !errdefs.IsNotFound(err) {
		t.Fatalf("image visible after a failed pull: %v", err)
	}
	if s.images.HasBlob(digestOf(good.Digest)) || s.images.HasBlob(digestOf(bad.Digest)) {
		t.Fatal("a failed pull left layers behind")
	}
	rep, err := s.Check(ctx, true)
	if err != nil || len(rep.Problems) != 0 || rep.Blobs != 0 {
		t.Fatalf("check after a failed pull: %+v %v", rep, err)
	}
	// Repair the blob (flip it back) and pull again: the image is complete.
	if err := reg.CorruptBlob(bad.Digest); err != nil {
		t.Fatal(err)
	}
	var again graphtest.Messages
	if err := s.PullImage(ctx, types.PullOptions{Ref: pullRef(t, name, "1.0")}, &again); err != nil {
		t.Fatalf("second pull: %v\n%s", err, &again)
	}
	if !s.images.HasBlob(digestOf(good.Digest)) || !s.images.HasBlob(digestOf(bad.Digest)) {
		t.Fatal("second pull did not store both layers")
	}
	rep, err = s.Check(ctx, true)
	if err != nil || len(rep.Problems) != 0 || rep.Images != 1 {
		t.Fatalf("check after the second pull: %+v %v", rep, err)
	}
}

func digestOf(s string) digest.Digest { return digest.Digest(s) }

// pullRef is the reference the API server hands a pull of fromImage with
// the tag parameter tag.
func pullRef(t *testing.T, fromImage, tag string) imageref.Ref {
	t.Helper()
	ref, err := imageref.ForPull(fromImage, tag)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
