package content

import "io"

// ResumeFunc opens the rest of a blob of which have yields the first n
// bytes. Its reader must return an error in place of io.EOF unless have's
// bytes followed by its own are exactly the blob (registry.FetchBlobFrom's
// reader does).
type ResumeFunc func(have io.Reader, n int64) (io.ReadCloser, error)

// WriteOpt is an option of a blob write (the store's Lease.WriteBlob).
type WriteOpt func(*WriteOptions)

// WriteOptions are what a write's options ask; a stand-in for the store
// (a test's) reads them with ApplyWriteOpts.
type WriteOptions struct {
	// Verified: the reader returns an error in place of io.EOF unless the
	// bytes it delivered are exactly the blob desc.Digest
	// (registry.FetchBlob's reader does, and says so). The store then
	// checks the size but does not hash the bytes a second time: hashing
	// was over half of a pull's CPU, done twice.
	Verified bool
	// Resume, when set, makes the write resumable: it is given the bytes a
	// failed download kept and its reader is appended to them; when the
	// write fails and Keep(err) is true the partial stays for the next
	// attempt (partial.go).
	Resume ResumeFunc
	Keep   func(error) bool
}

// Verified is the option of a reader that verifies desc's digest itself.
func Verified() WriteOpt { return func(o *WriteOptions) { o.Verified = true } }

// Resumable is the option of a write through desc's partial download:
// open reads the rest of the blob after the bytes kept; keep says which
// failures keep the bytes.
func Resumable(open ResumeFunc, keep func(error) bool) WriteOpt {
	return func(o *WriteOptions) { o.Resume, o.Keep, o.Verified = open, keep, true }
}

// ApplyWriteOpts is what opts ask, applied in order.
func ApplyWriteOpts(opts ...WriteOpt) WriteOptions {
	var o WriteOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
