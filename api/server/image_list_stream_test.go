package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/moby/moby/api/types/image"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// streamingBackend is fakeBackend whose ImagesEach fails the list after
// failAfter entries (≥ 0).
type streamingBackend struct {
	*fakeBackend
	failAfter int
}

func (b streamingBackend) ImagesEach(ctx context.Context, o types.ImageListOptions, emit func(image.Summary) error) error {
	list, err := b.images(o)
	if err != nil {
		return err
	}
	for i, img := range list {
		if i == b.failAfter {
			return errors.New("disk on fire")
		}
		if err := emit(img); err != nil {
			return err
		}
	}
	return nil
}

// TestImageListStreamedIsTheSameBytes: GET /images/json streamed from
// ImagesEach answers, at every API version's rules, byte for byte what the
// whole list written at once answers (escaping, placeholders, VirtualSize,
// the empty list); an error before the first entry is an error answer.
func TestImageListStreamedIsTheSameBytes(t *testing.T) {
	list := []image.Summary{
		{ID: "sha256:a", RepoTags: []string{"a:1"}, Size: 10, SharedSize: -1, Labels: map[string]string{"k": "<&>"},
			Descriptor: &ocispec.Descriptor{Digest: "sha256:d"}},
		{ID: "sha256:b", Size: 20},
		{ID: "sha256:c", RepoDigests: []string{"c@sha256:e"}, Created: 7},
	}
	for _, n := range []int{0, 1, 3} {
		fb := &fakeBackend{images: func(types.ImageListOptions) ([]image.Summary, error) { return list[:n], nil }}
		for _, tc := range []struct{ path, version string }{
			{"/v1.41/images/json", "1.41"}, {"/v1.43/images/json?all=1", "1.43"}, {"/v1.47/images/json", "1.47"},
			{"/v1.50/images/json", "1.50"}, {"/images/json", types.DefaultAPIVersion},
		} {
			path := tc.path
			// The whole list, gated entry by entry and written at once.
			whole := httptest.NewRecorder()
			gated := []json.RawMessage{}
			for _, img := range list[:n] {
				b, err := gateImageSummary(img, tc.version)
				if err != nil {
					t.Fatal(err)
				}
				gated = append(gated, b)
			}
			writeJSON(whole, http.StatusOK, gated)
			streamed := do(t, fb, "GET", path, nil, nil)
			if whole.Code != http.StatusOK || streamed.Code != whole.Code || streamed.Body.String() != whole.Body.String() ||
				streamed.Header().Get("Content-Type") != whole.Header().Get("Content-Type") {
				t.Errorf("%d images, %s: streamed %d %q %q, whole %d %q %q", n, path,
					streamed.Code, streamed.Header().Get("Content-Type"), streamed.Body, whole.Code, whole.Header().Get("Content-Type"), whole.Body)
			}
		}
	}
	fb := &fakeBackend{images: func(types.ImageListOptions) ([]image.Summary, error) { return list, nil }}
	rec := do(t, streamingBackend{fb, 0}, "GET", "/v1.50/images/json", nil, nil)
	if rec.Code != http.StatusInternalServerError || message(t, rec) != "disk on fire" {
		t.Errorf("error before the first entry: %d %s", rec.Code, rec.Body)
	}
}

// TestImageListStreamCutIsAborted: an error after the first entry was sent
// aborts the answer (http.ErrAbortHandler: the connection is cut) instead
// of closing the array over a partial list.
func TestImageListStreamCutIsAborted(t *testing.T) {
	fb := &fakeBackend{images: func(types.ImageListOptions) ([]image.Summary, error) {
		return []image.Summary{{ID: "sha256:a"}, {ID: "sha256:b"}}, nil
	}}
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
		}
	}()
	do(t, streamingBackend{fb, 1}, "GET", "/v1.50/images/json", nil, nil)
	t.Fatal("a list cut after its first entry was answered")
}
