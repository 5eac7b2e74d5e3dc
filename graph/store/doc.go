// Package store is wharf's local image store: the content (blobs), the leases
// that pin content while an operation is under way, the image records and
// their tags, and the garbage collection that reclaims what nothing uses. It
// is the one owner of a blob's lifetime: every rule about when a blob may be
// written, relied on or deleted lives here.
//
// # On disk
//
// The data-root is an OCI image layout (image-spec v1.1) that any OCI tool can
// read, plus wharf's own records beside it. The tree, with who writes each
// part and when (as distribution's registry/storage/paths.go draws its
// layout):
//
//	<root>/                         0700
//	├── oci-layout                  {"imageLayoutVersion":"1.0.0"}
//	├── wharf.lock                  flock + pid of the process that owns the
//	│                               root (internal/rootlock)
//	├── index.json                  OCI index derived from wharf/meta.db: one
//	│                               entry per tag (annotations
//	│                               org.opencontainers.image.ref.name = the tag
//	│                               alone, "1.0"; io.containerd.image.name = the
//	│                               full name), one unnamed entry per untagged
//	│                               image. Written atomically by a background
//	│                               writer ≤ IndexDelay (1 s) after a change,
//	│                               by Close, and by FlushIndex (`wharf system
//	│                               export-index`); indexjson.go
//	├── blobs/
//	│   └── sha256/
//	│       └── <hex>               manifests, indexes, configs, layers; each
//	│                               verified against its digest before it
//	│                               appears (content/)
//	├── ingest/                     temp files of blobs being written; emptied
//	│                               at start
//	├── partial/
//	│   └── sha256/
//	│       └── <hex>               partial downloads of the blob <hex>, kept
//	│                               for the next pull; removed 24 h after their
//	│                               last write, or past 8 GiB in all
//	│                               (content/partial.go)
//	└── wharf/
//	    ├── meta.db                 the image records, the source of truth: a
//	    │                           bbolt file, one write transaction (one
//	    │                           fsync) per change or group of changes
//	    │                           (commit.go). Buckets (db.go, summaries.go,
//	    │                           listindex.go):
//	    │   ├── meta                version (2), gen (bumped per commit),
//	    │   │                       indexgen (gen of index.json on disk),
//	    │   │                       sumgen (gen the summaries are complete
//	    │   │                       at), labelgen (gen the labels index is
//	    │   │                       complete at), count (images)
//	    │   ├── images              image ID → ImageRecord JSON (ID, target,
//	    │   │                       manifest, tags, digests, times, trust)
//	    │   ├── refs                fully qualified tag or digest ref → image ID
//	    │   ├── targets             target/manifest digest \x00 image ID → ""
//	    │   ├── blobs               blob digest \x00 image ID → "": what GC
//	    │   │                       asks, one Seek per candidate
//	    │   ├── uses                image ID → JSON list of the blobs it keeps
//	    │   │                       alive
//	    │   ├── summaries           image ID → what GET /images/json shows
//	    │   └── labels              label key \x00 value \x00 image ID → "",
//	    │                           and marks of untagged images and of those
//	    │                           only their summary answers for: the
//	    │                           list's label= and dangling=true index
//	    │                           (listindex.go)
//	    ├── meta.db.tmp             only during a migration or the creation of
//	    │                           a new store: removed at the next start if
//	    │                           a crash left it (migrate/)
//	    ├── images.json             a version-2 stub ({"version":2,"images":[],
//	    │                           "note":…}): the previous wharf refuses to
//	    │                           start on it ("unsupported version 2")
//	    │                           instead of taking the store for an empty
//	    │                           one
//	    ├── images.json.v1          the version-1 records the migration read,
//	    │                           byte for byte; kept, never read again (the
//	    │                           way back to the previous wharf)
//	    └── layerindex/sha256/<hex> not the store's: the layer indexes of ls,
//	                                cat and cp, one per layer digest, under
//	                                their own budget (graph/contents/indexcache)
//
// A data-root written by the previous wharf has wharf/images.json of
// version 1 and no meta.db; the first start migrates it (graph/store/migrate: write
// meta.db.tmp, rename it to meta.db — the commit point —, rename
// images.json to images.json.v1, write the stub; a crash at any step
// resolves at the next start; graph/store/BOLT.md has the table).
//
// Directories are 0700 and files 0600: private layers and the records are the
// daemon's alone (the API socket is the way in, and it is 0660).
//
// Every file is written atomically: a temp file in the target's directory (or
// in ingest/ for blobs, which is on the same file system), fsync, rename, fsync
// of the directory. A crash leaves either the old or the new file, and at worst
// a stray temp file that start-up removes. meta.db is bbolt's: a change is
// one transaction, committed (one fsync) whole or not at all.
//
// # Blob lifecycle
//
// A blob is written only through a Lease (ingest → verify → rename into
// blobs/), and is pinned by that lease from before the write (or, for a blob
// that already exists, from before the existence check) until the lease is
// released. An image record keeps its blobs alive once committed; Put
// re-checks, in the change that records it, that every blob it names is
// present.
// Garbage collection (under the lease lock, reading the records in a
// transaction begun under it) deletes a blob only when no record (the blobs
// bucket) and no live lease uses it: after a delete, when a lease is
// released, at start-up (when no lease can exist) and on prune.
package store
