package registry

import (
	"context"
	"fmt"
	"hash"
	"io"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/blobs"
)

// FetchBlob streams a blob; the reader fails (before EOF) when the bytes do
// not match desc.Size and desc.Digest.
//
// The reader verifies as it streams (go-containerregistry's
// verify.ReadCloser), so a consumer that stops at EOF never has unverified
// bytes. A body that breaks is reopened where it broke (registry/blobs).
func (r *Repository) FetchBlob(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return r.FetchBlobFrom(ctx, desc, nil, 0)
}

// FetchBlobFrom is FetchBlob for a consumer that holds the first n bytes of
// the blob already (a partial download the store kept, graph/store
// partial.go): have yields them, they are hashed first, and the reader
// delivers the blob from byte n on. Its io.EOF still means the whole blob —
// have's bytes and the rest — is desc: the bytes kept are checked, not
// trusted. A have that ends short of n fails with io.ErrUnexpectedEOF.
func (r *Repository) FetchBlobFrom(ctx context.Context, desc ocispec.Descriptor, have io.Reader, n int64) (io.ReadCloser, error) {
	if err := validateDescriptor(desc); err != nil {
		return nil, err
	}
	if n < 0 || n > desc.Size {
		return nil, fmt.Errorf("blob %s: cannot resume at byte %d of %d%.0w", desc.Digest, n, desc.Size, errdefs.ErrInvalidArgument)
	}
	if !desc.Digest.Algorithm().Available() {
		return nil, fmt.Errorf("unsupported digest algorithm in %q%.0w", desc.Digest, errdefs.ErrInvalidArgument)
	}
	h := desc.Digest.Algorithm().Hash()
	if n > 0 {
		if _, err := io.CopyN(h, have, n); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("blob %s: read the %d bytes kept: %w%.0w", desc.Digest, n, err, errdefs.ErrDataLoss)
		}
	}
	var out io.ReadCloser
	err := r.readEach(ctx, func(ep *repoEndpoint) error {
		// Asked unless the kept bytes are the whole blob: a blob declared
		// 0 bytes is still read, so one served endlessly fails as "larger".
		rb, err := r.openResuming(ctx, ep, desc, n, n == 0 || n < desc.Size)
		if err != nil {
			return err
		}
		var vr io.Reader = &verifyingReader{r: rb, desc: desc, host: ep.host, h: h, n: n, strict: true}
		if !ep.mirror {
			// A verified read proves the blob is in this repository: a
			// later push or copy to this registry may mount it from here.
			vr = &onEOF{r: vr, fn: func() { r.svc.blobs.add(desc.Digest, r.info.Index.Name, r.path) }}
		}
		out = &verifiedBlob{readCloser: readCloser{Reader: vr, Closer: rb}, dgst: desc.Digest}
		return nil
	})
	return out, err
}

// openResuming opens desc on ep from byte off under registry/blobs'
// resuming reader (reopened where it breaks); ask false sends no request
// until a read needs one. The body is under the slow-body rule already
// (transport/timeouts.go). FetchBlobFrom and OpenBlobAt both read through it.
func (r *Repository) openResuming(ctx context.Context, ep *repoEndpoint, desc ocispec.Descriptor, off int64, ask bool) (io.ReadCloser, error) {
	return blobs.Open(ctx, target{r, ep}, desc, off, ask, r.svc.blobBackoff)
}

// headBlob asks (HEAD) whether the repository has blob d on ep: its size
// when it has (blobs.Head). Missing: errdefs.ErrNotFound.
func (r *Repository) headBlob(ctx context.Context, ep *repoEndpoint, d digest.Digest) (int64, error) {
	return blobs.Head(ctx, target{r, ep}, d)
}

// onEOF calls fn once when r ends cleanly (after the verifying reader
// accepted the bytes).
type onEOF struct {
	r  io.Reader
	fn func()
}

func (o *onEOF) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if err == io.EOF && o.fn != nil {
		o.fn()
		o.fn = nil
	}
	return n, err
}

// verifiedBlob is FetchBlob's reader.
type verifiedBlob struct {
	readCloser
	dgst digest.Digest
}

// VerifiedDigest tells a consumer that this reader returns an error in
// place of io.EOF unless the bytes it delivered are exactly the blob of
// that digest (and size): the content store need not hash a pulled layer a
// second time (sha256 computed twice was over half of wharfd's CPU in a
// pull).
func (v *verifiedBlob) VerifiedDigest() digest.Digest { return v.dgst }

type readCloser struct {
	io.Reader
	io.Closer
}

// verifyingReader passes bytes through while counting and hashing them. It
// fails as soon as more than size bytes arrive, and at the end returns an
// error in place of io.EOF when the size or digest is wrong. desc.Size is
// always binding: a Docker layer declared with size 0 (the schema1 way of
// saying "unknown") and served endlessly is cut at the first byte, naming
// the registry; schema1 images are inspected, never pulled, so no real
// download needs an unknown size.
type verifyingReader struct {
	r      io.Reader
	desc   ocispec.Descriptor
	host   string
	h      hash.Hash
	n      int64
	err    error
	strict bool
}

func newVerifyingReader(r io.Reader, desc ocispec.Descriptor, host string) io.Reader {
	v := &verifyingReader{r: r, desc: desc, host: host, strict: true}
	if !desc.Digest.Algorithm().Available() {
		v.err = fmt.Errorf("unsupported digest algorithm in %q%.0w", desc.Digest, errdefs.ErrInvalidArgument)
		return v
	}
	v.h = desc.Digest.Algorithm().Hash()
	return v
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	v.n += int64(n)
	v.h.Write(p[:n])
	if v.strict && v.n > v.desc.Size {
		v.err = fmt.Errorf("registry %s: blob %s is larger than %d bytes%.0w", v.host, v.desc.Digest, v.desc.Size, errdefs.ErrDataLoss)
		return 0, v.err
	}
	if err == io.EOF {
		if v.strict && v.n != v.desc.Size {
			v.err = fmt.Errorf("registry %s: blob %s is %d bytes, want %d: %w%.0w", v.host, v.desc.Digest, v.n, v.desc.Size, io.ErrUnexpectedEOF, errdefs.ErrDataLoss)
			return n, v.err
		}
		if got := digest.NewDigest(v.desc.Digest.Algorithm(), v.h); got != v.desc.Digest {
			v.err = digestMismatch(v.host, "blob", v.desc.Digest, got)
			return n, v.err
		}
		v.err = io.EOF
	} else if err != nil {
		v.err = err
	}
	return n, err
}
