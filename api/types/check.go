package types

import "time"

// CheckProblem is one thing wrong in the local store, as GET
// /wharf/system/check reports it.
type CheckProblem struct {
	// Kind: missing-blob, size-mismatch, digest-mismatch, bad-manifest,
	// index-mismatch, dangling-tag, stray-file or unreferenced-blob (a blob
	// that no image record and no operation in progress uses: an orphan,
	// which garbage collection or `wharf system prune` reclaims).
	Kind string `json:"Kind"`
	// Image is the image ID concerned ("" for store-wide problems).
	Image string `json:"Image,omitempty"`
	// Object is the blob digest, reference or file concerned.
	Object string `json:"Object,omitempty"`
	// Message says what is wrong, with the numbers.
	Message string `json:"Message"`
}

// CheckReport is the answer of GET /wharf/system/check.
type CheckReport struct {
	// Full is true when every blob was hashed.
	Full bool
	// Images and Blobs are what was examined.
	Images int
	Blobs  int
	// UnreferencedBlobs and UnreferencedBytes count the orphans among
	// Blobs (each is also listed in Problems as unreferenced-blob).
	UnreferencedBlobs int
	UnreferencedBytes int64
	// PartialDownloads and PartialBytes count the partial downloads kept
	// for the next pull (under partial/, not blobs/; they expire 24 h after
	// their last write). Not problems.
	PartialDownloads int   `json:",omitempty"`
	PartialBytes     int64 `json:",omitempty"`
	// Problems is empty (not nil) for a healthy store.
	Problems []CheckProblem
	// LastScrub is the background scrub wharfd runs once the API answers
	// after a start (orphan collection and the quick check); nil when none
	// has run in this daemon.
	// The check waits for a scrub under way, so this one has finished.
	LastScrub *ScrubReport `json:",omitempty"`
}

// ScrubReport is what a background scrub of the store did and found.
type ScrubReport struct {
	// Started and Finished bound the scrub.
	Started  time.Time
	Finished time.Time
	// Error, when set, stopped the scrub there (the daemon stopping, or an
	// I/O error); what it did before is reported.
	Error string `json:",omitempty"`
	// CollectedBlobs and CollectedBytes count the blobs that no image
	// record and no operation in progress used (orphans a crash left: a
	// pull killed after some layers, a load after staging, an rmi between
	// its record and its collection), taken out of blobs/: into the partial
	// downloads, where a pull of them resumes (and which expire 24 h
	// later), or removed. Collected lists their digests, the first
	// MaxScrubListed.
	CollectedBlobs int
	CollectedBytes int64
	Collected      []string
	// Images, Blobs and Problems are the quick check's (presence and sizes,
	// no hashing) run after the collection; Problems lists the first
	// MaxScrubListed of ProblemCount.
	Images       int
	Blobs        int
	ProblemCount int
	Problems     []CheckProblem
}

// MaxScrubListed bounds the digests and problems a ScrubReport lists (a
// store with thousands of missing blobs is a count and the first few; a
// check lists them all).
const MaxScrubListed = 100
