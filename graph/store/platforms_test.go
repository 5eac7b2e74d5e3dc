package store

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// twoPlatforms writes an amd64 and an arm64 image and an index naming
// both, under lease; the records are the two as a pull of each platform
// would put them (target: the index).
func twoPlatforms(t *testing.T, lease *Lease) (amd, arm ImageRecord, top ocispec.Descriptor) {
	t.Helper()
	amd = writeTestImage(t, lease, testImage{layers: []string{"amd", "shared"}})
	arm = writeTestImage(t, lease, testImage{layers: []string{"arm", "shared"}, platform: ocispec.Platform{OS: "linux", Architecture: "arm64"}})
	pa, pb := amd.Manifest, arm.Manifest
	pa.Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64"}
	pb.Platform = &ocispec.Platform{OS: "linux", Architecture: "arm64"}
	top = writeTestIndex(t, lease, pa, pb)
	amd.Manifest, arm.Manifest = pa, pb
	amd.Target, arm.Target = top, top
	return amd, arm, top
}

// TestSecondPlatformJoinsTheImage: pulling arm64 and then amd64 of one tag
// (the daemon being amd64) leaves one image holding both, under the amd64
// config (the host's platform); the tag and the index digest stay on it.
// Removing amd64 moves the image to arm64's ID and collects amd64's own
// blobs; the shared layer stays.
func TestSecondPlatformJoinsTheImage(t *testing.T) {
	s := newTestStore(t)
	s.platform = ocispec.Platform{OS: "linux", Architecture: "amd64"}
	lease := s.NewLease()
	amd, arm, top := twoPlatforms(t, lease)
	arm.RepoTags = []string{"multi:1"}
	arm.RepoDigests = []string{"multi@" + top.Digest.String()}
	must(t, s.Put(lease, arm))
	got, err := s.Lookup("multi:1")
	if err != nil || got.ID != arm.ID || len(got.Platforms) != 1 {
		t.Fatalf("after arm64: %+v %v", got, err)
	}
	amd.RepoTags = []string{"multi:1"}
	must(t, s.Put(lease, amd))
	lease.Release()
	got, err = s.Lookup("multi:1")
	if err != nil || got.ID != amd.ID || got.Manifest.Digest != amd.Manifest.Digest || len(got.Platforms) != 2 ||
		got.Platforms[0].Config != amd.ID || got.Platforms[1].Config != arm.ID {
		t.Fatalf("after amd64: %+v %v", got, err)
	}
	if len(got.RepoDigests) != 1 || s.Count() != 1 {
		t.Fatalf("references %v, count %d", got.RepoDigests, s.Count())
	}
	if r, err := s.Lookup(arm.ID.String()); err == nil {
		t.Fatalf("the arm64 record survived the merge: %+v", r)
	}
	// name@digest of either platform manifest finds the image.
	if r, err := s.Lookup("multi@" + arm.Manifest.Digest.String()); err != nil || r.ID != amd.ID {
		t.Fatalf("lookup by the arm64 manifest: %+v %v", r, err)
	}
	blobs := blobSet(t, s)
	for _, d := range []digest.Digest{amd.ID, arm.ID, amd.Manifest.Digest, arm.Manifest.Digest, top.Digest} {
		if !blobs[d] {
			t.Fatalf("blob %s collected", d)
		}
	}
	checkClean(t, s)
	dbConsistent(t, s)

	// rmi --platform linux/amd64: the image stays, as arm64.
	ps, err := s.SelectPlatforms(got, "multi:1", []ocispec.Platform{{OS: "linux", Architecture: "amd64"}})
	if err != nil || len(ps) != 1 || ps[0].Config != amd.ID {
		t.Fatalf("select amd64: %+v %v", ps, err)
	}
	var newID digest.Digest
	if _, err := s.Update(true, func(tx *Txn) error {
		var err error
		newID, err = tx.RemovePlatforms(got.ID, ps)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got, err = s.Lookup("multi:1")
	if err != nil || newID != arm.ID || got.ID != arm.ID || len(got.Platforms) != 1 || len(got.RepoDigests) != 1 {
		t.Fatalf("after removing amd64: %s %+v %v", newID, got, err)
	}
	blobs = blobSet(t, s)
	armMeta := mustMeta(t, s, &arm)
	for _, d := range []digest.Digest{amd.ID, amd.Manifest.Digest} {
		if blobs[d] {
			t.Fatalf("blob %s of the removed platform survived", d)
		}
	}
	for _, l := range armMeta.Manifest.Layers {
		if !blobs[l.Digest] {
			t.Fatalf("layer %s of arm64 collected", l.Digest)
		}
	}
	if _, err := s.SelectPlatforms(got, "multi:1", []ocispec.Platform{{OS: "linux", Architecture: "amd64"}}); err == nil {
		t.Fatal("amd64 still selectable")
	}
	checkClean(t, s)
	dbConsistent(t, s)
}

func mustMeta(t *testing.T, s *Store, r *ImageRecord) *ImageMeta {
	t.Helper()
	m, err := s.Meta(r)
	must(t, err)
	return m
}

// TestRecordWithoutPlatformsIsOnePlatform: a record as a store before
// issue 23 wrote it (no Platforms) is one platform, its Manifest; a later
// pull of another platform of its index joins it.
func TestRecordWithoutPlatformsIsOnePlatform(t *testing.T) {
	s := newTestStore(t)
	s.platform = ocispec.Platform{OS: "linux", Architecture: "amd64"}
	lease := s.NewLease()
	defer lease.Release()
	amd, arm, top := twoPlatforms(t, lease)
	amd.RepoTags = []string{"multi:1"}
	must(t, s.Put(lease, amd))
	// Make it an old record: no Platforms in the stored JSON.
	if _, err := s.Update(false, func(tx *Txn) error {
		tx.Image(amd.ID).Platforms = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	old, err := s.Lookup("multi:1")
	if err != nil || len(old.Platforms) != 0 || len(old.Present()) != 1 || old.Present()[0].Config != amd.ID {
		t.Fatalf("old record: %+v %v", old, err)
	}
	arm.RepoTags = []string{"multi:1"}
	must(t, s.Put(lease, arm))
	got, err := s.Lookup("multi@" + top.Digest.String())
	if err != nil || got.ID != amd.ID || len(got.Platforms) != 2 || s.Count() != 1 {
		t.Fatalf("after arm64: %+v %v", got, err)
	}
	checkClean(t, s)
}

// TestConcurrentPlatformPullsJoin: two platforms of one index put at the
// same time (two pulls racing) end as one image holding both, whichever
// commits first.
func TestConcurrentPlatformPullsJoin(t *testing.T) {
	for i := 0; i < 10; i++ {
		s := newTestStore(t)
		s.platform = ocispec.Platform{OS: "linux", Architecture: "amd64"}
		lease := s.NewLease()
		amd, arm, _ := twoPlatforms(t, lease)
		amd.RepoTags, arm.RepoTags = []string{"multi:1"}, []string{"multi:1"}
		errs := make(chan error, 2)
		for _, r := range []ImageRecord{amd, arm} {
			go func() { errs <- s.Put(lease, r) }()
		}
		must(t, <-errs)
		must(t, <-errs)
		lease.Release()
		got, err := s.Lookup("multi:1")
		if err != nil || got.ID != amd.ID || len(got.Platforms) != 2 || s.Count() != 1 {
			t.Fatalf("round %d: %+v %v (count %d)", i, got, err, s.Count())
		}
		checkClean(t, s)
		dbConsistent(t, s)
	}
}

// TestCheckSeesEveryPresentPlatform: the store check reads every present
// platform of an image, not only the one it is recorded under: a missing
// config of the other platform is reported against the image.
func TestCheckSeesEveryPresentPlatform(t *testing.T) {
	s := newTestStore(t)
	s.platform = ocispec.Platform{OS: "linux", Architecture: "amd64"}
	lease := s.NewLease()
	amd, arm, _ := twoPlatforms(t, lease)
	amd.RepoTags = []string{"multi:1"}
	amd.Platforms = []PlatformImage{{Platform: *amd.Manifest.Platform, Manifest: amd.Manifest, Config: amd.ID}, {Platform: *arm.Manifest.Platform, Manifest: arm.Manifest, Config: arm.ID}}
	must(t, s.Put(lease, amd))
	lease.Release()
	checkClean(t, s)
	must(t, os.Remove(s.blobPath(arm.ID)))
	rep, err := s.Check(context.Background(), false)
	must(t, err)
	found := false
	for _, p := range rep.Problems {
		found = found || (p.Kind == ProblemMissingBlob && p.Object == arm.ID.String() && p.Image == amd.ID.String() &&
			strings.Contains(p.Message, "platform linux/arm64 config"))
	}
	if !found {
		t.Fatalf("problems: %+v", rep.Problems)
	}
}
