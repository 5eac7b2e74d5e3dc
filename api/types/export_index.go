package types

// ExportIndexReport is the answer of POST /wharf/system/export-index: the
// data-root's index.json was brought up to date with the image records
// and holds Entries manifest descriptors (one per reference and one per
// untagged image, as OCI tools read them).
type ExportIndexReport struct {
	// Path is index.json's absolute path on the daemon's host.
	Path string
	// Entries is the number of descriptors in its "manifests".
	Entries int
}
