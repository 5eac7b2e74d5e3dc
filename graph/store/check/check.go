// Package check is the store's system check and its background scrub, the
// parts that need no records: the problems' kinds and order, a blob's
// presence and size against its descriptor, index.json against the
// entries the records want, the walk of blobs/ (hashing each file in a
// full check), and the scrub's one-at-a-time background run with its last
// report. graph/store reads the records and the leases and calls these.
package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store/content"
	"github.com/wharfproject/wharf/internal/ocilayout"
)

// Problem kinds.
const (
	MissingBlob    = "missing-blob"      // a descriptor names a blob that is not stored
	SizeMismatch   = "size-mismatch"     // a stored blob's size differs from its descriptor
	DigestMismatch = "digest-mismatch"   // a stored blob's content does not hash to its name
	BadManifest    = "bad-manifest"      // an image's manifest or config cannot be read or parsed
	Index          = "index-mismatch"    // index.json disagrees with the image records
	DanglingTag    = "dangling-tag"      // a reference names an image that has no record
	StrayFile      = "stray-file"        // a file under blobs/ whose name is not a digest
	Unreferenced   = "unreferenced-blob" // a blob no record and no operation in progress uses
)

// Add reports one problem.
type Add func(types.CheckProblem)

// Sort orders problems by image, then object.
func Sort(ps []types.CheckProblem) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Image != b.Image {
			return a.Image < b.Image
		}
		return a.Object < b.Object
	})
}

// Blob checks that the blob d, the role (config, layer 2…) of image id, is
// stored with its descriptor's size; size is the stored size, -1 when
// absent. It reports whether the blob is there as described.
func Blob(add Add, id, role string, d ocispec.Descriptor, size func(digest.Digest) int64) bool {
	if content.ValidateDigest(d.Digest) != nil {
		add(types.CheckProblem{Kind: BadManifest, Image: id, Object: string(d.Digest),
			Message: fmt.Sprintf("image %s: %s has an invalid digest %q", id, role, d.Digest)})
		return false
	}
	got := size(d.Digest)
	switch {
	case got < 0:
		add(types.CheckProblem{Kind: MissingBlob, Image: id, Object: d.Digest.String(),
			Message: fmt.Sprintf("image %s: %s %s is missing", id, role, d.Digest)})
		return false
	case d.Size > 0 && got != d.Size:
		add(types.CheckProblem{Kind: SizeMismatch, Image: id, Object: d.Digest.String(),
			Message: fmt.Sprintf("image %s: %s %s is %d bytes, its descriptor says %d", id, role, d.Digest, got, d.Size)})
		return false
	}
	return true
}

// IndexFile compares the index.json at path with want, entry by entry
// (digest and the annotation nameKey).
func IndexFile(add Add, path, nameKey string, want ocispec.Index) {
	const name = ocilayout.IndexFile
	b, err := os.ReadFile(path)
	if err != nil {
		add(types.CheckProblem{Kind: Index, Object: name, Message: fmt.Sprintf("index.json: %v", err)})
		return
	}
	var got ocispec.Index
	if err := json.Unmarshal(b, &got); err != nil {
		add(types.CheckProblem{Kind: Index, Object: name, Message: fmt.Sprintf("index.json does not parse: %v", err)})
		return
	}
	key := func(d ocispec.Descriptor) string {
		return d.Digest.String() + " " + d.Annotations[nameKey]
	}
	have := map[string]int{}
	for _, d := range got.Manifests {
		have[key(d)]++
	}
	for _, d := range want.Manifests {
		k := key(d)
		if have[k] == 0 {
			add(types.CheckProblem{Kind: Index, Object: strings.TrimSpace(k),
				Message: fmt.Sprintf("index.json lacks the entry %s", strings.TrimSpace(k))})
			continue
		}
		have[k]--
	}
	extra := []string{}
	for k, n := range have {
		if n > 0 {
			extra = append(extra, strings.TrimSpace(k))
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		add(types.CheckProblem{Kind: Index, Object: k,
			Message: fmt.Sprintf("index.json has the entry %s, which no image record holds", k)})
	}
}

// WalkBlobs lists root's blobs/<alg>/ and, when full, hashes each file. It
// returns the number of blobs seen. A blob removed while it is hashed (a
// concurrent rmi) is skipped.
func WalkBlobs(ctx context.Context, root string, full bool, add Add) (int, error) {
	n := 0
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA512} {
		dir := filepath.Join(root, ocilayout.BlobsDir, string(alg))
		ents, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return n, err
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			d := digest.NewDigestFromEncoded(alg, e.Name())
			rel := filepath.Join(ocilayout.BlobsDir, string(alg), e.Name())
			if content.ValidateDigest(d) != nil || !e.Type().IsRegular() {
				add(types.CheckProblem{Kind: StrayFile, Object: rel,
					Message: fmt.Sprintf("%s is not a blob (not a regular file named by a %s digest)", rel, alg)})
				continue
			}
			n++
			if !full {
				continue
			}
			got, err := content.HashFile(ctx, filepath.Join(dir, e.Name()), alg)
			if errors.Is(err, os.ErrNotExist) {
				continue // removed by a concurrent rmi
			}
			if err != nil {
				return n, fmt.Errorf("check blob %s: %w", d, err)
			}
			if got != d {
				add(types.CheckProblem{Kind: DigestMismatch, Object: d.String(),
					Message: fmt.Sprintf("blob %s: content hashes to %s", d, got)})
			}
		}
	}
	return n, nil
}
