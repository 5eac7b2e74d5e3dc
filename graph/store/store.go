package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/graph/store/check"
	"github.com/wharfproject/wharf/graph/store/content"
	"github.com/wharfproject/wharf/graph/store/indexjson"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/ocilayout"
	"github.com/wharfproject/wharf/internal/rootlock"
)

const (
	layoutFile   = ocilayout.LayoutFile
	IndexFile    = ocilayout.IndexFile
	BlobsDir     = ocilayout.BlobsDir
	ingestDir    = content.IngestDir
	wharfDir     = "wharf"
	AnnRefName   = indexjson.AnnRefName // tag only, e.g. "1.0"
	AnnImageName = indexjson.AnnImageName
)

// Modes of everything under the data-root: the daemon's alone.
const (
	dirMode  = content.DirMode
	fileMode = content.FileMode
)

// Options configure a Store.
type Options struct {
	Root   string
	Logger *logrus.Entry
	// PartialTTL and PartialMaxBytes bound the partial downloads kept
	// (partial.go); 0 means PartialTTL and PartialMaxBytes.
	PartialTTL      time.Duration
	PartialMaxBytes int64
	// IndexDelay is how long after a change index.json is rewritten; 0
	// means IndexDelay.
	IndexDelay time.Duration
	// Platform is the daemon's platform: an image with several platforms
	// present is recorded under the one it runs best (platforms.go); the
	// zero value means this machine's.
	Platform ocispec.Platform
	// Lock is Root's lock when the caller holds it already (the daemon
	// takes it before anything touches the root); nil: Open takes it and
	// Close releases it.
	Lock *rootlock.Lock

	// stopAfter (tests) is called after each step of a migration; an
	// error it returns stops Open there, as a crash would.
	stopAfter func(step string) error
	// migrateChunk (tests), when > 0, replaces migrateChunk: a migration
	// of a few hundred records then spans several transactions.
	migrateChunk int
}

// Store is the OCI layout on disk, the leases, and the image records in
// meta.db. leaseMu protects the pins, and orders collections against them;
// idxMu the writing of index.json; gcMu (read-held by a pruning change from
// its commit to the end of its collection, write-held by the check) keeps
// the check from seeing a deleted image's blobs between the two. Lock
// order: gcMu, leaseMu, idxMu.
type Store struct {
	root string
	log  *logrus.Entry
	lock *rootlock.Lock // taken by Open; nil when the caller holds it

	db    *bolt.DB
	count atomic.Int64 // images recorded (meta.count)
	gcMu  sync.RWMutex
	// commits counts the write transactions committed for changes (a
	// group commit counts one); changes, the changes they held.
	commits, changes atomic.Int64

	// The group commit (commit.go).
	qMu        sync.Mutex
	queue      []*commitReq
	committing bool

	// index.json (indexjson.go): idxGen is the change generation the file
	// on disk was written at.
	idxMu    sync.Mutex
	idxGen   uint64
	dbClosed bool
	idxSched *indexjson.Scheduler
	platform ocispec.Platform // the daemon's (Options.Platform)

	leaseMu sync.Mutex
	pins    map[digest.Digest]int // digest → number of live leases pinning it
	ingests map[string]bool       // temp files of live ingestions (ingest/ names, partialKey)

	partialTTL time.Duration // PartialTTL unless Options say otherwise
	partialMax int64         // PartialMaxBytes unless Options say otherwise
	// partialRestarts counts the resumed downloads whose kept bytes proved
	// wrong and that downloaded again from zero (a resumable WriteBlob).
	partialRestarts atomic.Int64

	// blobs are the blob files (content): blobs/, ingest/, partial/.
	blobs *content.Store

	// metaMu orders a cache fill after the blob's removal (forget).
	metaMu sync.Mutex
	// meta caches the parsed manifest + config per manifest digest
	// (immutable content); refs what a stored index or manifest names (its
	// manifests; its config and layers), which Put and AddImage ask. Both
	// are LRUs of cacheEntries: memory bounded whatever the store's size.
	meta *lru.Cache[digest.Digest, *ImageMeta]
	refs *lru.Cache[digest.Digest, []digest.Digest]

	// failWrite, when set (tests), is called before every metadata file
	// write (and before every meta.db commit, with dbFile); an error it
	// returns fails the write as ENOSPC would.
	failWrite func(name string) error
	stopAfter func(step string) error
	// chunk is how many records one transaction of a migration or of the
	// summaries' fill puts (migrateChunk unless Options say otherwise).
	chunk int

	// scan counts what walks read of meta.db's mapping (mapped.go).
	scan scanMeter

	// The background scrub (scrub.go).
	scrubber check.Scrubber
}

// Open opens (creating when needed) the store at opts.Root: takes its lock,
// tightens modes, cleans the ingest area, opens meta.db (migrating the
// version-1 images.json into it first: graph/store/migrate) and schedules
// index.json's rewrite when it is behind. It reads nothing per image or
// per blob: the orphan collection and the quick check that start-up used
// to run are the scrub's (StartScrub), once the API answers.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Root == "" {
		return nil, fmt.Errorf("graph: empty data-root: %w", errdefs.ErrInvalidArgument)
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{
		root,
		filepath.Join(root, BlobsDir, string(digest.SHA256)),
		filepath.Join(root, wharfDir),
	} {
		if err := os.MkdirAll(d, dirMode); err != nil {
			return nil, fmt.Errorf("graph: create %s: %w", d, err)
		}
	}
	log := opts.Logger
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	s := &Store{
		root:    root,
		log:     log,
		pins:    map[digest.Digest]int{},
		ingests: map[string]bool{},
		blobs:   content.New(root),

		partialTTL: PartialTTL,
		partialMax: PartialMaxBytes,
		stopAfter:  opts.stopAfter,
		chunk:      migrateChunk,
		platform:   imagespec.DefaultPlatform(opts.Platform),
		meta:       mustLRU[*ImageMeta](),
		refs:       mustLRU[[]digest.Digest](),
	}
	if opts.PartialTTL > 0 {
		s.partialTTL = opts.PartialTTL
	}
	if opts.PartialMaxBytes > 0 {
		s.partialMax = opts.PartialMaxBytes
	}
	if opts.migrateChunk > 0 {
		s.chunk = opts.migrateChunk
	}
	s.idxSched = indexjson.NewScheduler(opts.IndexDelay, s.FlushIndex, func(err error) {
		s.log.WithError(err).Warn("index.json not updated; retrying")
	})
	if opts.Lock == nil {
		if s.lock, err = rootlock.Acquire(root); err != nil {
			return nil, fmt.Errorf("graph: %w", err)
		}
	} else if held, err := filepath.Abs(opts.Lock.Root()); err != nil || held != root {
		return nil, fmt.Errorf("graph: the lock held is data-root %s's, not %s's%.0w", opts.Lock.Root(), root, errdefs.ErrInvalidArgument)
	}
	if err := s.open(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	if err := content.TightenModes(s.root); err != nil {
		return fmt.Errorf("graph: tighten modes of %s: %w", s.root, err)
	}
	// A crash mid-write leaves temp files in ingest/: nothing there is ever
	// referenced, so start-up removes the whole area.
	if err := os.RemoveAll(filepath.Join(s.root, ingestDir)); err != nil {
		return fmt.Errorf("graph: clean ingest area: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(s.root, ingestDir), dirMode); err != nil {
		return err
	}
	// partial/ is the one exception: a partial download is written by
	// appending and verified whole before it is used, so a crash leaves it
	// usable or detectably wrong, never trusted (partial.go). Expired ones
	// go now.
	s.leaseMu.Lock()
	s.collectPartialsLocked(time.Now())
	s.leaseMu.Unlock()
	if _, err := os.Stat(filepath.Join(s.root, layoutFile)); errors.Is(err, os.ErrNotExist) {
		if err := s.writeFileAtomic(s.root, layoutFile, ocilayout.LayoutBytes); err != nil {
			return err
		}
	}
	if err := s.openDB(); err != nil {
		return err
	}
	// index.json is derived: behind the records after a crash within
	// IndexDelay of a change, it is rewritten in the background.
	var gen uint64
	err := s.db.View(func(btx *bolt.Tx) error {
		m := btx.Bucket(bucketMeta)
		gen, s.idxGen = u64(m.Get(keyGen)), u64(m.Get(keyIndexGen))
		s.count.Store(int64(u64(m.Get(keyCount))))
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(s.root, IndexFile)); gen != s.idxGen || err != nil {
		s.idxGen = ^uint64(0) // unknown: the writer rewrites it
		s.idxSched.Changed()
	}
	// Orphans (blobs no record uses, left by a crash) are not collected
	// here: walking blobs/ took seconds at 50,000 images before the API
	// could answer. The scrub does it in the background (scrub.go).
	return nil
}

// Root is the data-root.
func (s *Store) Root() string { return s.root }

// Close writes index.json if it is behind, closes meta.db and releases
// the store's lock. Closing twice is a no-op.
func (s *Store) Close() error {
	s.scrubber.Stop()
	if !s.idxSched.Close() {
		return nil
	}
	var errs []error
	if s.db != nil {
		if err := s.FlushIndex(); err != nil {
			errs = append(errs, fmt.Errorf("graph: write index.json: %w", err))
		}
		s.idxMu.Lock()
		s.dbClosed = true
		s.idxMu.Unlock()
		if err := s.db.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.lock != nil {
		if err := s.lock.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cacheEntries bounds each metadata cache: the images a daemon works on at
// once (configs are a few KiB; 4,096 of them a few tens of MiB at worst).
const cacheEntries = 4096

func mustLRU[V any]() *lru.Cache[digest.Digest, V] {
	c, err := lru.New[digest.Digest, V](cacheEntries)
	if err != nil {
		panic(err) // only for a size ≤ 0
	}
	return c
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
