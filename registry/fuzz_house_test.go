package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

// A fuzz target for what a registry sends that no other target reads: the
// v1 protocol's JSON (an upload session's Location is registry/upload's).
// It asserts more than "no panic": what is accepted is what was served,
// and what is refused is refused with a typed error.

// v1ImageID is a v1 image id as registry/v1 accepts one: 64 lower-case
// hex characters.
var v1ImageID = regexp.MustCompile(`^[a-f0-9]{64}$`)

// v1Registry answers the v1 protocol, as a registry without a v2 API: a
// tag list and one image JSON, whatever the repository. A fuzz worker runs
// one input at a time, so one registry serves them all in turn.
type v1Registry struct {
	mu          sync.Mutex
	tags, image []byte
}

func (v *v1Registry) serve(tags, image []byte) {
	v.mu.Lock()
	v.tags, v.image = tags, image
	v.mu.Unlock()
}

func (v *v1Registry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	tags, image := v.tags, v.image
	v.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/v1/_ping":
		w.Write([]byte("true"))
	case strings.HasPrefix(p, "/v1/repositories/") && strings.HasSuffix(p, "/images"):
		w.Write([]byte("[]"))
	case strings.HasPrefix(p, "/v1/repositories/") && strings.HasSuffix(p, "/tags"):
		w.Write(tags)
	case strings.HasPrefix(p, "/v1/images/") && strings.HasSuffix(p, "/json"):
		w.Write(image)
	default:
		http.NotFound(w, r) // no v2 API
	}
}

// FuzzV1TagsAndImage serves a v1 tag list and image JSON to a remote
// inspect. Accepted: the image is the tag's (or, without a tag, the first
// tag's) and its config is the image JSON byte for byte. Refused: the
// error is NotFound (no such tag) or ErrUpstream (a document that is not
// what v1 promises), never an untyped one. A valid tag list naming a
// valid id with a valid image JSON is always accepted.
func FuzzV1TagsAndImage(f *testing.F) {
	id := strings.Repeat("ab", 32)
	f.Add([]byte(`{"latest":"`+id+`"}`), []byte(`{"id":"`+id+`","os":"linux"}`), "latest")
	f.Add([]byte(`{"v1":"`+id+`","v2":"`+id+`"}`), []byte(`{}`), "")
	f.Add([]byte(`[{"layer":"`+id+`","name":"old"}]`), []byte(`{"os":"linux"}`), "old")
	f.Add([]byte(`{"latest":"nothex"}`), []byte(`{}`), "latest")
	f.Add([]byte(`{"latest":"`+id+`"}`), []byte(`{"os":`), "latest")
	f.Add([]byte(`not json`), []byte(`{}`), "latest")
	reg := &v1Registry{}
	srv := httptest.NewServer(reg)
	f.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	// One service for every input; each inspects a repository of its own,
	// so that nothing an input left in the caches answers for another.
	var s *Service
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, tags, image []byte, tag string) {
		if tag != "" && !tagPattern(tag) {
			return // not a reference this request can carry
		}
		if s == nil {
			s = testService(t, ServiceOptions{})
		}
		reg.serve(tags, image)
		name := fmt.Sprintf("%s/legacy/app%d", host, n.Add(1))
		if tag != "" {
			name += ":" + tag
		}
		img, err := s.Inspect(context.Background(), InspectRequest{Name: name, Platform: linuxAmd64()})

		served := map[string]string{}
		validTags := json.Unmarshal(tags, &served) == nil
		want := tag
		if want == "" {
			want = "latest"
		}
		if err != nil {
			if !errdefs.IsNotFound(err) && !errors.Is(err, ErrUpstream) {
				t.Fatalf("refused with an untyped error: %v", err)
			}
			if validTags && v1ImageID.MatchString(served[want]) && json.Valid(image) {
				t.Fatalf("tag %q names a valid id and the image JSON is valid, yet: %v", want, err)
			}
			return
		}
		if !img.V1 || !bytes.Equal(img.ConfigBytes, image) || !json.Valid(img.ConfigBytes) {
			t.Fatalf("accepted: V1 %v, config %q, want the image JSON %q", img.V1, img.ConfigBytes, image)
		}
		if img.Config.Digest != digest.FromBytes(image) || img.Config.Size != int64(len(image)) {
			t.Fatalf("accepted: config descriptor %v does not describe the image JSON", img.Config)
		}
		if tag != "" && img.Tag != tag {
			t.Fatalf("asked for %q, got the image of %q", tag, img.Tag)
		}
		if validTags {
			if got, ok := served[img.Tag]; !ok || !v1ImageID.MatchString(got) {
				t.Fatalf("accepted tag %q, which the tag list maps to %q", img.Tag, got)
			}
		}
	})
}

// tagPattern is the reference grammar's tag.
func tagPattern(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i, c := range s {
		ok := c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c == '.' || c == '-')
		if !ok {
			return false
		}
	}
	return true
}
