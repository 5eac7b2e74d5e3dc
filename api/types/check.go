package types

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
}
