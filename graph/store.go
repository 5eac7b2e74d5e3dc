package graph

// The data-root is an OCI image layout (image-spec v1.1) that any OCI tool can
// read, plus wharf's own records beside it:
//
//	<root>/
//	├── oci-layout                  {"imageLayoutVersion":"1.0.0"}
//	├── index.json                  OCI index: one entry per tagged reference
//	│                               (annotations org.opencontainers.image.ref.name
//	│                               = tag, io.containerd.image.name = full name),
//	│                               one unnamed entry per untagged image;
//	│                               rewritten from wharf/images.json after each change
//	├── blobs/
//	│   └── sha256/
//	│       └── <hex>               manifests, indexes, configs, layers; each
//	│                               verified against its digest before it appears
//	├── ingest/                     temp files of blobs being written; emptied at start
//	└── wharf/
//	    ├── images.json             the image records (ID, target, manifest, tags,
//	    │                           digests): the source of truth
//	    └── lock                    flock held while a daemon owns the root
//
// Every file is written atomically: a temp file in the target's directory (or
// in ingest/ for blobs, which is on the same file system), fsync, rename, fsync
// of the directory. A crash leaves either the old or the new file, and at worst
// a stray temp file that start-up removes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/gofrs/flock"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
)

const (
	layoutFile   = ocispec.ImageLayoutFile // "oci-layout"
	indexFile    = "index.json"
	blobsDir     = "blobs"
	ingestDir    = "ingest"
	wharfDir     = "wharf"
	recordsFile  = "images.json"
	lockFile     = "lock"
	recordsVer   = 1
	annRefName   = ocispec.AnnotationRefName // tag only, e.g. "1.0"
	annImageName = "io.containerd.image.name"
)

// maxRecordsSize caps images.json at start-up (256 MiB): 5,000 images take
// about 5 MiB, so anything near the cap is corruption, not data.
const maxRecordsSize = 256 << 20

// localStore is the OCI layout on disk and the in-memory indexes of the
// image records. mu protects the records and the indexes; blob files need no
// lock (content addressed, written by rename).
type localStore struct {
	root     string
	platform ocispec.Platform
	log      *logrus.Entry
	flock    *flock.Flock

	mu      sync.RWMutex
	images  map[digest.Digest]*ImageRecord
	refs    map[string]digest.Digest          // fully qualified tag or digest reference → image ID
	targets map[digest.Digest][]digest.Digest // target or manifest digest → image IDs
	shortID []string                          // sorted encoded IDs: prefix lookup in O(log n)

	metaMu sync.Mutex
	meta   map[digest.Digest]*imageMeta // manifest digest → parsed manifest + config (immutable content)

	// bombLimit caps decompression of client input (bomb.go); the zero
	// value is the default, tests lower it.
	bombLimit decompressLimit
}

// recordsDoc is the JSON form of wharf/images.json.
type recordsDoc struct {
	Version int            `json:"version"`
	Images  []*ImageRecord `json:"images"`
}

func newLocalStore(ctx context.Context, opts Options) (*localStore, error) {
	if opts.Root == "" {
		return nil, fmt.Errorf("graph: empty data-root: %w", errdefs.ErrInvalidArgument)
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{
		root,
		filepath.Join(root, blobsDir, string(digest.SHA256)),
		filepath.Join(root, wharfDir),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("graph: create %s: %w", d, err)
		}
	}
	log := opts.Logger
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	l := &localStore{
		root:     root,
		platform: opts.Platform,
		log:      log,
		meta:     map[digest.Digest]*imageMeta{},
	}
	l.flock = flock.New(filepath.Join(root, wharfDir, lockFile))
	locked, err := l.flock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("graph: lock data-root: %w", err)
	}
	if !locked {
		return nil, fmt.Errorf("graph: data-root %s is in use by another process%.0w", root, errdefs.ErrUnavailable)
	}
	// A crash mid-write leaves temp files in ingest/: nothing there is ever
	// referenced, so start-up removes the whole area.
	if err := os.RemoveAll(filepath.Join(root, ingestDir)); err != nil {
		l.flock.Unlock()
		return nil, fmt.Errorf("graph: clean ingest area: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(root, ingestDir), 0o700); err != nil {
		l.flock.Unlock()
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, layoutFile)); errors.Is(err, os.ErrNotExist) {
		b, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
		if err := writeFileAtomic(root, layoutFile, b); err != nil {
			l.flock.Unlock()
			return nil, err
		}
	}
	if err := l.loadRecords(); err != nil {
		l.flock.Unlock()
		return nil, err
	}
	// index.json is derived: rewrite it so a crash between the two writes heals.
	if err := l.writeIndex(); err != nil {
		l.flock.Unlock()
		return nil, err
	}
	return l, nil
}

func (l *localStore) close() error {
	if l.flock != nil {
		return l.flock.Unlock()
	}
	return nil
}

func (l *localStore) loadRecords() error {
	p := filepath.Join(l.root, wharfDir, recordsFile)
	l.images = map[digest.Digest]*ImageRecord{}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		l.reindex()
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var doc recordsDoc
	dec := json.NewDecoder(limitReader(f, maxRecordsSize))
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("graph: read %s: %w", p, err)
	}
	if doc.Version != recordsVer {
		return fmt.Errorf("graph: %s: unsupported version %d", p, doc.Version)
	}
	for _, r := range doc.Images {
		if r == nil || r.ID.Validate() != nil {
			continue
		}
		r.RepoTags = nonNil(r.RepoTags)
		r.RepoDigests = nonNil(r.RepoDigests)
		l.images[r.ID] = r
	}
	l.reindex()
	return nil
}

// reindex rebuilds refs, targets and shortID from images. Called with mu held
// for writing; O(n log n), n ≤ a few thousand.
func (l *localStore) reindex() {
	l.refs = map[string]digest.Digest{}
	l.targets = map[digest.Digest][]digest.Digest{}
	l.shortID = l.shortID[:0]
	for id, r := range l.images {
		for _, t := range r.RepoTags {
			l.refs[t] = id
		}
		for _, d := range r.RepoDigests {
			l.refs[d] = id
		}
		if r.Target.Digest != "" {
			l.targets[r.Target.Digest] = append(l.targets[r.Target.Digest], id)
		}
		if r.Manifest.Digest != "" && r.Manifest.Digest != r.Target.Digest {
			l.targets[r.Manifest.Digest] = append(l.targets[r.Manifest.Digest], id)
		}
		l.shortID = append(l.shortID, id.Encoded())
	}
	sort.Strings(l.shortID)
}

// persist writes images.json and then index.json. Called with mu held for writing.
func (l *localStore) persist() error {
	doc := recordsDoc{Version: recordsVer, Images: l.sortedRecords()}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(l.root, wharfDir), recordsFile, b); err != nil {
		return err
	}
	return l.writeIndex()
}

// sortedRecords returns the records ordered by ID, for stable files.
func (l *localStore) sortedRecords() []*ImageRecord {
	out := make([]*ImageRecord, 0, len(l.images))
	for _, r := range l.images {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// writeIndex derives the layout's index.json from the records.
func (l *localStore) writeIndex() error {
	b, err := l.indexBytes()
	if err != nil {
		return err
	}
	return writeFileAtomic(l.root, indexFile, b)
}

// indexBytes is the index.json the records call for (the system check
// compares it with the file). Called with mu held.
func (l *localStore) indexBytes() ([]byte, error) {
	idx := ocispec.Index{
		Versioned: specsVersioned(),
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{},
	}
	for _, r := range l.sortedRecords() {
		target := r.Target
		if target.Digest == "" {
			target = r.Manifest
		}
		target.Annotations = nil
		target.Data = nil
		if len(r.RepoTags) == 0 {
			idx.Manifests = append(idx.Manifests, target)
			continue
		}
		for _, t := range r.RepoTags {
			d := target
			tag := t
			if i := strings.LastIndex(t, ":"); i > strings.LastIndex(t, "/") {
				tag = t[i+1:]
			}
			d.Annotations = map[string]string{annRefName: tag, annImageName: t}
			idx.Manifests = append(idx.Manifests, d)
		}
	}
	return json.Marshal(idx)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
