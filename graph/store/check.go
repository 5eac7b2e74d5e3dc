package store

// The store check: `wharf system check` (full) and the scrub after a
// start (cheap, scrub.go) verify that what the records promise is on disk.
//
//   - cheap (the scrub, Check(ctx, false)): every image's target, manifest,
//     config and layers exist with the size their descriptor gives; the
//     manifest names the image's config; index.json matches the records; every
//     tag names an image. Stat calls and one read of each (small) manifest
//     and config, not added to the metadata cache: 5,000 images take well
//     under a second, 50,000 a few seconds (in the background).
//   - full (Check(ctx, true)): the cheap part, then every file under blobs/
//     is hashed and compared with its name. Reads the whole store once.

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store/check"
	"github.com/wharfproject/wharf/imagespec"
)

// Problem kinds reported by Check (graph/store/check).
const (
	ProblemMissingBlob    = check.MissingBlob
	ProblemSizeMismatch   = check.SizeMismatch
	ProblemDigestMismatch = check.DigestMismatch
	ProblemBadManifest    = check.BadManifest
	ProblemIndex          = check.Index
	ProblemDanglingTag    = check.DanglingTag
	ProblemStrayFile      = check.StrayFile
	ProblemUnreferenced   = check.Unreferenced
)

// CheckProblem and CheckReport are the wire types of the store check.
type (
	CheckProblem = types.CheckProblem
	CheckReport  = types.CheckReport
)

// Check verifies the store; full also hashes every blob. A store in use
// changes under the check: a blob removed by a concurrent rmi while it is
// being hashed is skipped, not reported. Blobs that no record and no
// operation in progress uses are reported as unreferenced-blob and counted.
//
// A scrub under way (scrub.go) is waited for first; the report carries
// the last scrub's (LastScrub).
func (s *Store) Check(ctx context.Context, full bool) (*CheckReport, error) {
	if err := s.scrubber.Wait(ctx); err != nil {
		return nil, err
	}
	rep, err := s.check(ctx, full)
	if err != nil {
		return nil, err
	}
	rep.LastScrub = s.LastScrub()
	return rep, nil
}

// check is Check without the scrub (the scrub runs it).
func (s *Store) check(ctx context.Context, full bool) (*CheckReport, error) {
	l := s
	rep := &CheckReport{Full: full, Problems: []CheckProblem{}}
	add := func(p CheckProblem) { rep.Problems = append(rep.Problems, p) }

	// The structural part holds leaseMu, so that no collection removes a
	// blob while it looks (a collection needs that lock), and reads the
	// records in one transaction begun under it: records, references and
	// blobs are seen at one moment. It only stats files and reads small
	// cached metadata.
	var orphans []ocispec.Descriptor
	l.gcMu.Lock()
	l.leaseMu.Lock()
	// idxMu before the read transaction: FlushIndex holds it across a write
	// transaction, which may wait (remapping a grown file) for every read
	// transaction to end.
	l.idxMu.Lock()
	err := l.db.View(func(btx *bolt.Tx) error {
		v := dbView{btx}
		err := v.forEachImage(func(rec *ImageRecord) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			l.scanned(btx, 1024) // a record and its stats
			rep.Images++
			l.checkImage(rec, add)
			return nil
		})
		if err != nil {
			return err
		}
		err = btx.Bucket(bucketRefs).ForEach(func(k, id []byte) error {
			l.scanned(btx, len(k)+len(id)+seekCost)
			if v.raw(digest.Digest(id)) == nil {
				add(CheckProblem{Kind: ProblemDanglingTag, Image: string(id), Object: string(k),
					Message: fmt.Sprintf("reference %s names image %s, which has no record", k, id)})
			}
			return nil
		})
		if err != nil {
			return err
		}
		// index.json: compared with the records when it was written at
		// this transaction's generation; written now when it is behind
		// (the background writer had not caught up yet).
		if err := l.checkIndex(v, add); err != nil {
			return err
		}
		orphans, err = l.orphansIn(ctx, v)
		l.dropMapped(btx)
		return err
	})
	l.idxMu.Unlock()
	l.leaseMu.Unlock()
	l.gcMu.Unlock()
	if err != nil {
		return nil, err
	}
	for _, o := range orphans {
		rep.UnreferencedBlobs++
		rep.UnreferencedBytes += o.Size
		add(CheckProblem{Kind: ProblemUnreferenced, Object: o.Digest.String(),
			Message: fmt.Sprintf("blob %s (%d bytes) is used by no image: `wharf system prune` reclaims it", o.Digest, o.Size)})
	}

	n, err := check.WalkBlobs(ctx, l.root, full, add)
	if err != nil {
		return nil, err
	}
	rep.Blobs = n
	// Partial downloads are no problem: they are kept on purpose, under
	// their own expiry (partial.go), and shown so their disk is accounted.
	rep.PartialDownloads, rep.PartialBytes = l.PartialUsage()
	check.Sort(rep.Problems)
	return rep, nil
}

// checkImage checks one record's blobs exist with their descriptor sizes.
// Called with leaseMu held.
func (l *Store) checkImage(rec *ImageRecord, add func(CheckProblem)) {
	id := rec.ID.String()
	blob := func(role string, d ocispec.Descriptor) bool {
		return check.Blob(add, id, role, d, l.BlobSize)
	}
	if rec.Target.Digest != "" && rec.Target.Digest != rec.Manifest.Digest {
		blob("target", rec.Target)
	}
	// Every present platform: the record's own, and the
	// others of its index, each with its manifest, config and layers.
	for _, p := range rec.Present() {
		role := ""
		if p.Manifest.Digest != rec.Manifest.Digest {
			role = "platform " + imagespec.FormatPlatform(p.Platform) + " "
		}
		if !blob(role+"manifest", p.Manifest) {
			continue
		}
		meta, err := l.metaNoFill(rec.View(p))
		if err != nil {
			add(CheckProblem{Kind: ProblemBadManifest, Image: id, Object: p.Manifest.Digest.String(),
				Message: err.Error()})
			continue
		}
		blob(role+"config", meta.Manifest.Config)
		for i, ld := range meta.Manifest.Layers {
			blob(fmt.Sprintf("%slayer %d", role, i), ld)
		}
	}
}

// checkIndexFile compares index.json on disk with want, entry by entry.
func (l *Store) checkIndexFile(want ocispec.Index, add func(CheckProblem)) {
	check.IndexFile(add, filepath.Join(l.root, IndexFile), AnnImageName, want)
}
