package graph

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

func deleteStrings(resp []image.DeleteResponse) string {
	var parts []string
	for _, r := range resp {
		if r.Untagged != "" {
			parts = append(parts, "U:"+r.Untagged)
		}
		if r.Deleted != "" {
			parts = append(parts, "D:"+r.Deleted)
		}
	}
	return strings.Join(parts, " ")
}

func TestTagImage(t *testing.T) {
	s, ev := newLocalTestStore(t)
	ctx := context.Background()
	id := graphtest.ImportImage(t, s, "127.0.0.1:5000/imported:1.0", "x", "LABEL k=v")
	if err := tagAs(ctx, s, "127.0.0.1:5000/imported:1.0", "127.0.0.1:5000/imported2", "x"); err != nil {
		t.Fatal(err)
	}
	if err := tagAs(ctx, s, id.String(), "other", ""); err != nil {
		t.Fatal(err)
	}
	rec, err := s.images.Lookup("other:latest")
	if err != nil || rec.ID != id {
		t.Fatalf("other:latest: %v %v", rec, err)
	}
	if got := fmt.Sprint(store.FamiliarRefs(rec.RepoTags)); got != "[127.0.0.1:5000/imported2:x 127.0.0.1:5000/imported:1.0 other:latest]" {
		t.Fatalf("RepoTags = %s", got)
	}
	last := ev.Last()
	if last.Action != "tag" || last.Actor != id.String() || last.Attrs["name"] != "other:latest" || last.Attrs["k"] != "v" {
		t.Fatalf("event = %+v", last)
	}
	tests := []struct {
		name, repo, tag string
		check           func(error) bool
		msg             string
	}{
		{"nosuchimage", "a", "b", errdefs.IsNotFound, "No such image: nosuchimage:latest"},
		{id.String(), "BAD", "x", errdefs.IsInvalidArgument, "invalid reference format"},
		{id.String(), "sha256", "abc", errdefs.IsInvalidArgument, "refusing to create an ambiguous tag using digest algorithm as name"},
		{id.String(), "ok", "bad tag!", errdefs.IsInvalidArgument, "invalid tag format"},
		{id.String(), "ok@" + id.String(), "", errdefs.IsInvalidArgument, "refusing to create a tag with a digest reference"},
	}
	for _, tt := range tests {
		err := tagAs(ctx, s, tt.name, tt.repo, tt.tag)
		if !tt.check(err) || !strings.HasPrefix(err.Error(), tt.msg) {
			t.Errorf("tag %s as %s, %s = %v, want %q", tt.name, tt.repo, tt.tag, err, tt.msg)
		}
	}
}

// TagImage takes its reference parsed and does not parse it again, but
// still holds the store's own rules on the value it is given: a reference
// carrying a digest, or a repository named "sha256", is refused with the
// messages of store.ParseNewTag, and nothing is tagged.
func TestTagImageChecksParsedReference(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	id := graphtest.ImportImage(t, s, "app:1", "a")
	named := func(s string) reference.Named {
		n, err := reference.ParseNormalizedNamed(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	tagged := func(n reference.Named, tag string) reference.NamedTagged {
		r, err := reference.WithTag(n, tag)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	withDigest, err := reference.WithDigest(tagged(named("ok"), "x"), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ref reference.NamedTagged
		msg string
	}{
		{withDigest.(reference.NamedTagged), "refusing to create a tag with a digest reference"},
		{tagged(named("sha256"), "abc"), "refusing to create an ambiguous tag using digest algorithm as name"},
		{nil, "no reference to tag"},
	} {
		err := s.TagImage(ctx, id.String(), tt.ref)
		if !errdefs.IsInvalidArgument(err) || err.Error() != tt.msg {
			t.Errorf("TagImage(%v) = %v, want %q", tt.ref, err, tt.msg)
		}
	}
	if rec, err := s.images.Lookup(id.String()); err != nil || fmt.Sprint(store.FamiliarRefs(rec.RepoTags)) != "[app:1]" {
		t.Fatalf("after refusals: %+v %v", rec, err)
	}
	if err := s.TagImage(ctx, id.String(), tagged(named("localhost:5000/team/app"), "2")); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.images.Lookup("localhost:5000/team/app:2"); err != nil || rec.ID != id {
		t.Fatalf("localhost:5000/team/app:2: %+v %v", rec, err)
	}
}

func TestTagMovesReferenceAndLeavesDangling(t *testing.T) {
	s, _ := newLocalTestStore(t)
	a := graphtest.ImportImage(t, s, "app:1", "a")
	b := graphtest.ImportImage(t, s, "app:1", "b")
	if rec, _ := s.images.Lookup("app:1"); rec.ID != b {
		t.Fatalf("app:1 = %s, want %s", rec.ID, b)
	}
	rec, err := s.images.Lookup(a.String())
	if err != nil || len(rec.RepoTags) != 0 {
		t.Fatalf("old image should be dangling: %+v %v", rec, err)
	}
}

func TestImageDeleteForms(t *testing.T) {
	s, ev := newLocalTestStore(t)
	ctx := context.Background()
	id := graphtest.ImportImage(t, s, "127.0.0.1:5000/imported:1.0", "x")
	rec, _ := s.images.Lookup(id.String())
	rec.RepoDigests = []string{"127.0.0.1:5000/imported2@" + rec.Manifest.Digest.String()}
	rec.RepoTags = nil
	putRecord(t, s, *rec)
	if err := tagAs(ctx, s, id.String(), "127.0.0.1:5000/imported2", "x"); err != nil {
		t.Fatal(err)
	}
	short := id.Encoded()[:12]

	// By ID with references in two repositories and no force: 409.
	_, err := s.ImageDelete(ctx, short, false, true)
	if !errdefs.IsConflict(err) || err.Error() != "conflict: unable to delete "+short+" (must be forced) - image is referenced in multiple repositories" {
		t.Fatalf("conflict: %v", err)
	}
	// By the last tag of imported2: untag it and imported2's digest reference.
	resp, err := s.ImageDelete(ctx, "127.0.0.1:5000/imported2:x", false, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "U:127.0.0.1:5000/imported2:x U:127.0.0.1:5000/imported2@" + rec.Manifest.Digest.String()
	if deleteStrings(resp) != want {
		t.Fatalf("untag = %s, want %s", deleteStrings(resp), want)
	}
	// By the last reference: untag and delete, blobs removed.
	blobs := imageBlobs(t, s, rec)
	resp, err = s.ImageDelete(ctx, "127.0.0.1:5000/imported:1.0", false, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := deleteStrings(resp); got != "U:127.0.0.1:5000/imported:1.0 D:"+id.String() {
		t.Fatalf("last tag = %s", got)
	}
	for _, d := range blobs {
		if s.images.HasBlob(d) {
			t.Fatalf("blob %s survived delete", d)
		}
	}
	if _, err := s.ImageDelete(ctx, "nosuchimage", false, true); !errdefs.IsNotFound(err) || err.Error() != "No such image: nosuchimage:latest" {
		t.Fatalf("missing: %v", err)
	}
	acts := strings.Join(ev.Actions(), ",")
	if !strings.HasSuffix(acts, "untag,untag,untag,delete") {
		t.Fatalf("events = %s", acts)
	}
}

func TestImageDeleteForceAndSharedBlobs(t *testing.T) {
	s, _ := newLocalTestStore(t)
	ctx := context.Background()
	// Same rootfs content: the two images share their layer blob.
	a := graphtest.ImportImage(t, s, "a:1", "same", "LABEL which=a")
	b := graphtest.ImportImage(t, s, "b:1", "same", "LABEL which=b")
	if err := tagAs(ctx, s, "a:1", "c", "1"); err != nil {
		t.Fatal(err)
	}
	ra, _ := s.images.Lookup(a.String())
	rb, _ := s.images.Lookup(b.String())
	ma, _ := s.images.Meta(ra)
	layer := ma.Manifest.Layers[0].Digest
	resp, err := s.ImageDelete(ctx, a.String(), true, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := deleteStrings(resp); got != "U:a:1 U:c:1 D:"+a.String() {
		t.Fatalf("forced = %s", got)
	}
	if !s.images.HasBlob(layer) {
		t.Fatal("shared layer removed while b still uses it")
	}
	if s.images.HasBlob(ra.Manifest.Digest) {
		t.Fatal("a's manifest survived")
	}
	// noprune keeps blobs.
	if _, err := s.ImageDelete(ctx, "b:1", false, false); err != nil {
		t.Fatal(err)
	}
	if !s.images.HasBlob(layer) || !s.images.HasBlob(rb.Manifest.Digest) {
		t.Fatal("noprune removed blobs")
	}
}

func TestImagesPrune(t *testing.T) {
	s, ev := newLocalTestStore(t)
	ctx := context.Background()
	dangling := graphtest.ImportImage(t, s, "", "d")
	tagged := graphtest.ImportImage(t, s, "keep:1", "k")
	rep, err := s.ImagesPrune(ctx, types.Filters{})
	if err != nil {
		t.Fatal(err)
	}
	if got := deleteStrings(rep.ImagesDeleted); got != "D:"+dangling.String() || rep.SpaceReclaimed == 0 {
		t.Fatalf("prune = %s %d", got, rep.SpaceReclaimed)
	}
	if acts := ev.Actions(); acts[len(acts)-1] != "prune" || ev.Last().Attrs["reclaimed"] == "0" {
		t.Fatalf("events = %v", ev.Last())
	}
	rep, err = s.ImagesPrune(ctx, types.Filters{})
	if err != nil || rep.ImagesDeleted != nil || rep.SpaceReclaimed != 0 {
		t.Fatalf("second prune = %+v %v", rep, err)
	}
	if graphtest.JSONText(t, rep) != `{"ImagesDeleted":null,"SpaceReclaimed":0}` {
		t.Fatalf("json = %s", graphtest.JSONText(t, rep))
	}
	rep, err = s.ImagesPrune(ctx, types.Filters{"dangling": {"false": true}, "label!": {"nope": true}})
	if err != nil || deleteStrings(rep.ImagesDeleted) != "U:keep:1 D:"+tagged.String() {
		t.Fatalf("prune all = %+v %v", rep, err)
	}
	if _, err := s.ImagesPrune(ctx, types.Filters{"reference": {"x": true}}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("bad filter: %v", err)
	}
	if s.Count() != 0 {
		t.Fatalf("Count = %d", s.Count())
	}
}
