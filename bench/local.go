//go:build bench

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph"
)

// prepareRoot writes a data-root holding n images before wharfd starts: one
// shared layer, n distinct configs and manifests written straight into the
// OCI layout's blobs/, and wharf/images.json listing them (the store's
// records, graph.ImageRecord). Doing it through the API would cost a durable
// rewrite of images.json per image (O(n²) bytes for 5,000 images); the
// content is identical to what PutImage would record. It is the one place
// that knows the store's on-disk format: when the format changes,
// this is what changes, and cases 4 and 11 follow.
func prepareRoot(root string, n int) ([]graph.ImageRecord, error) {
	recs, _, err := prepareRootWith(root, n, 0)
	return recs, err
}

// prepareRootWith is prepareRoot where the first own images (img-0 …
// img-<own-1>) each have a layer of their own instead of the shared one, so
// that removing one of them leaves blobs for GC to delete (case 11's rmi);
// it also returns those layers' digests. With own = 0 it is prepareRoot.
func prepareRootWith(root string, n, own int) ([]graph.ImageRecord, []digest.Digest, error) {
	blobs := filepath.Join(root, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(filepath.Join(root, "wharf"), 0o755); err != nil {
		return nil, nil, err
	}
	put := func(mt string, b []byte) (ocispec.Descriptor, error) {
		d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		return d, os.WriteFile(filepath.Join(blobs, d.Digest.Encoded()), b, 0o644)
	}
	layerOf := func(content string) (ocispec.Descriptor, error) {
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		tw.WriteHeader(&tar.Header{Name: "hello", Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)})
		tw.Write([]byte(content))
		tw.Close()
		return put(ocispec.MediaTypeImageLayer, tb.Bytes())
	}
	shared, err := layerOf("hello")
	if err != nil {
		return nil, nil, err
	}
	var owned []digest.Digest
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	recs := make([]graph.ImageRecord, 0, n)
	for i := 0; i < n; i++ {
		layer := shared
		if i < own {
			if layer, err = layerOf(fmt.Sprintf("hello %d", i)); err != nil {
				return nil, nil, err
			}
			owned = append(owned, layer.Digest)
		}
		cfg := ocispec.Image{
			Created:  &created,
			Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"},
			Config: ocispec.ImageConfig{
				Env:    []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
				Cmd:    []string{"/bin/sh"},
				Labels: map[string]string{"n": fmt.Sprint(i), "org.opencontainers.image.title": "bench"},
			},
			RootFS:  ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layer.Digest}},
			History: []ocispec.History{{Created: &created, CreatedBy: "ADD hello /"}},
		}
		cb, _ := json.Marshal(cfg)
		cd, err := put(ocispec.MediaTypeImageConfig, cb)
		if err != nil {
			return nil, nil, err
		}
		m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cd, Layers: []ocispec.Descriptor{layer}}
		m.SchemaVersion = 2
		mb, _ := json.Marshal(m)
		md, err := put(ocispec.MediaTypeImageManifest, mb)
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, graph.ImageRecord{
			ID: cd.Digest, Target: md, Manifest: md,
			RepoTags:    []string{fmt.Sprintf("127.0.0.1:5000/many/img-%d:v1", i)},
			RepoDigests: []string{fmt.Sprintf("127.0.0.1:5000/many/img-%d@%s", i, md.Digest)},
			Created:     created, LastTagTime: created,
		})
	}
	doc := struct {
		Version int                 `json:"version"`
		Images  []graph.ImageRecord `json:"images"`
	}{1, recs}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, err
	}
	return recs, owned, os.WriteFile(filepath.Join(root, "wharf", "images.json"), b, 0o644)
}

type localResult struct {
	n                        int
	listCold                 time.Duration
	list, byName, byID, ping []time.Duration
}

// localDaemon is a wharfd on a prepared root of n images.
type localDaemon struct {
	n    int
	root string
	recs []graph.ImageRecord
	d    *wharfd
	rng  *rand.Rand
	res  *localResult
}

func startLocal(e *env, n int) (*localDaemon, error) {
	root, err := os.MkdirTemp("", "wharf-bench-many-")
	if err != nil {
		return nil, err
	}
	recs, err := prepareRoot(root, n)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	d, err := startWharfd(e.wharfd, root)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return &localDaemon{n: n, root: root, recs: recs, d: d, rng: rand.New(rand.NewPCG(uint64(n), 7)), res: &localResult{n: n}}, nil
}

func (l *localDaemon) close() {
	l.d.stop()
	os.RemoveAll(l.root)
}

func (l *localDaemon) get(ctx context.Context, path string) (time.Duration, error) {
	t := time.Now()
	status, body, err := l.d.do(ctx, http.MethodGet, path, nil, nil)
	el := time.Since(t)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %d %.300s", path, status, body)
	}
	return el, nil
}

// warm does the first list (which reads every manifest and config from
// disk) and checks it lists n images.
func (l *localDaemon) warm(ctx context.Context) error {
	var err error
	if l.res.listCold, err = l.get(ctx, "/v1.50/images/json"); err != nil {
		return err
	}
	status, body, err := l.d.do(ctx, http.MethodGet, "/v1.50/images/json", nil, nil)
	if err != nil {
		return err
	}
	var list []json.RawMessage
	if err := json.Unmarshal(body, &list); err != nil || status != http.StatusOK || len(list) != l.n {
		return fmt.Errorf("GET /images/json: %d, %d images (want %d), %v", status, len(list), l.n, err)
	}
	return nil
}

func (l *localDaemon) list(ctx context.Context) error {
	el, err := l.get(ctx, "/v1.50/images/json")
	l.res.list = append(l.res.list, el)
	return err
}

func (l *localDaemon) inspect(ctx context.Context) error {
	r := l.recs[l.rng.IntN(l.n)]
	el, err := l.get(ctx, fmt.Sprintf("/v1.50/images/%s/json", r.RepoTags[0]))
	if err != nil {
		return err
	}
	l.res.byName = append(l.res.byName, el)
	r = l.recs[l.rng.IntN(l.n)]
	if el, err = l.get(ctx, fmt.Sprintf("/v1.50/images/%s/json", r.ID.Encoded()[:12])); err != nil {
		return err
	}
	l.res.byID = append(l.res.byID, el)
	if el, err = l.get(ctx, "/_ping"); err != nil {
		return err
	}
	l.res.ping = append(l.res.ping, el)
	return nil
}

// caseLocal is case 4: list and local inspect with 500 and 5,000 images.
// Both daemons run at once and the requests alternate between them, so a
// change in the machine's speed during the case hits both sizes alike.
func caseLocal(ctx context.Context, e *env, listIters, inspectIters int) ([]row, error) {
	sd, err := startLocal(e, 500)
	if err != nil {
		return nil, err
	}
	defer sd.close()
	ld, err := startLocal(e, 5000)
	if err != nil {
		return nil, err
	}
	defer ld.close()
	for _, l := range []*localDaemon{sd, ld} {
		if err := l.warm(ctx); err != nil {
			return nil, err
		}
	}
	for i := 0; i < listIters; i++ {
		for _, l := range []*localDaemon{sd, ld} {
			if err := l.list(ctx); err != nil {
				return nil, err
			}
		}
	}
	for i := 0; i < inspectIters; i++ {
		for _, l := range []*localDaemon{sd, ld} {
			if err := l.inspect(ctx); err != nil {
				return nil, err
			}
		}
	}
	small, large := sd.res, ld.res
	var rows []row
	add := func(name string, s, l []time.Duration, growthLimit float64, growthText string) {
		pmed, _ := stats(small.ping)
		sm, sp := stats(s)
		lm, lp := stats(l)
		rows = append(rows,
			row{Case: "4", Name: name + ", 500 images", Unit: "ms", N: len(s), Median: ms(sm), P95: ms(sp),
				Baseline: ms(pmed), BaseName: "GET /_ping", Ratio: ms(sm) / ms(pmed)},
			row{Case: "4", Name: name + ", 5,000 images", Unit: "ms", N: len(l), Median: ms(lm), P95: ms(lp),
				Baseline: ms(sm), BaseName: "same at 500", Ratio: ms(lm) / ms(sm),
				Target: growthText, Pass: pass(ms(lm)/ms(sm) <= growthLimit)},
		)
	}
	add("GET /images/json", small.list, large.list, 10, "growth ≤10× (linear)")
	add("inspect by name", small.byName, large.byName, 1.5, "growth ≤1.5× (flat)")
	add("inspect by short ID", small.byID, large.byID, 1.5, "growth ≤1.5× (flat)")
	rows = append(rows, row{Case: "4", Name: "first GET /images/json after start, 5,000 images", Unit: "ms", N: 1,
		Median: ms(large.listCold), Baseline: ms(small.listCold), BaseName: "same at 500", Ratio: ms(large.listCold) / ms(small.listCold),
		Note: "reads every manifest and config from disk once"})
	return rows, nil
}
