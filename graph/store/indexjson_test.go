package store

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"
)

// wholeIndex is index.json as it was built before writeIndex streamed it:
// the whole ocispec.Index, then one json.Marshal.
func wholeIndex(t *testing.T, s *Store) []byte {
	t.Helper()
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
	idx.SchemaVersion = 2
	err := s.db.View(func(btx *bolt.Tx) error {
		return dbView{btx}.forEachImage(func(r *ImageRecord) error {
			target := r.Target
			if target.Digest == "" {
				target = r.Manifest
			}
			target.Annotations, target.Data = nil, nil
			if len(r.RepoTags) == 0 {
				idx.Manifests = append(idx.Manifests, target)
				return nil
			}
			for _, tg := range r.RepoTags {
				d := target
				tag := tg
				if i := strings.LastIndex(tg, ":"); i > strings.LastIndex(tg, "/") {
					tag = tg[i+1:]
				}
				d.Annotations = map[string]string{AnnRefName: tag, AnnImageName: tg}
				idx.Manifests = append(idx.Manifests, d)
			}
			return nil
		})
	})
	must(t, err)
	b, err := json.Marshal(idx)
	must(t, err)
	return b
}

// TestIndexStreamedIsTheWholeIndex: index.json written an entry at a time
// is byte for byte what marshalling the whole index gave, for an empty
// store, untagged images, several tags, a registry with a port.
func TestIndexStreamedIsTheWholeIndex(t *testing.T) {
	s := newTestStore(t)
	check := func(what string) {
		t.Helper()
		must(t, s.FlushIndex())
		got, err := os.ReadFile(filepath.Join(s.root, IndexFile))
		must(t, err)
		if want := wholeIndex(t, s); !bytes.Equal(got, want) {
			t.Fatalf("%s: index.json\n%s\nwant\n%s", what, got, want)
		}
	}
	check("empty store")
	putTestImage(t, s, testImage{layers: []string{"untagged"}})
	check("one untagged image")
	putTestImage(t, s, testImage{layers: []string{"a"}, tags: []string{"docker.io/library/a:1", "docker.io/library/a:2"}})
	putTestImage(t, s, testImage{layers: []string{"b"}, tags: []string{"127.0.0.1:5000/b/c:x"}})
	check("tagged images")
}
