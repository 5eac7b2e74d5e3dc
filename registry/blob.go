package registry

import (
	"context"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/transport"
)

// FetchBlob streams a blob; the reader fails (before EOF) when the bytes do
// not match desc.Size and desc.Digest.
//
// The reader verifies as it streams (go-containerregistry's
// verify.ReadCloser), so a consumer that stops at EOF never has unverified
// bytes. A body that breaks is reopened where it broke (blob_resume.go).
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
		out = &verifiedBlob{readCloser: readCloser{Reader: vr, Closer: rb}, dgst: desc.Digest, body: rb}
		return nil
	})
	return out, err
}

// openResuming opens desc on ep from byte off under the resuming reader of
// blob_resume.go (reopened where it breaks); ask false sends no request
// until a read needs one. The body is under the slow-body rule already
// (transport/timeouts.go). FetchBlobFrom and OpenBlobAt both read through it.
func (r *Repository) openResuming(ctx context.Context, ep *repoEndpoint, desc ocispec.Descriptor, off int64, ask bool) (*resumingBody, error) {
	open := func(ctx context.Context, off int64) (io.ReadCloser, int64, error) {
		return r.getBlob(ctx, ep, desc, off)
	}
	var body io.ReadCloser
	start := off
	if ask {
		var err error
		if body, start, err = open(ctx, off); err != nil {
			return nil, err
		}
	}
	rb := newResumingBody(ctx, open, desc, ep.host, body, off, start)
	rb.backoff = r.svc.blobBackoff
	return rb, nil
}

func (r *Repository) blobURL(ep *repoEndpoint, d digest.Digest) string {
	return ep.baseURL() + "/v2/" + r.path + "/blobs/" + d.String()
}

// getBlob GETs a blob (following a redirect to its store) from byte off:
// the body and the offset of its first byte, once the answer's
// Content-Length, Content-Range and Docker-Content-Digest, when given, agree
// with desc. off > 0 asks with `Range: bytes=off-`; a 200 to it (the whole
// blob: a registry that ignores Range) starts at 0, a 206 must start at off
// (else ErrUpstream). Missing: errdefs.ErrNotFound.
func (r *Repository) getBlob(ctx context.Context, ep *repoEndpoint, desc ocispec.Descriptor, off int64) (io.ReadCloser, int64, error) {
	ctx = transport.WithRepositoryScope(ctx, ep.host, r.path, transport.ActionPull)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.blobURL(ep, desc.Digest), nil)
	if err != nil {
		return nil, 0, err
	}
	if off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
	}
	resp, err := ep.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case resp.StatusCode == http.StatusOK || (off > 0 && resp.StatusCode == http.StatusPartialContent):
		var start int64
		want := desc.Size
		if resp.StatusCode == http.StatusPartialContent {
			first, last, total, err := parseContentRange(resp.Header.Get("Content-Range"))
			if err == nil && (first != off || last >= desc.Size || (total != -1 && total != desc.Size)) {
				err = fmt.Errorf("Content-Range %q, asked for bytes=%d- of %d", truncate(resp.Header.Get("Content-Range"), 64), off, desc.Size)
			}
			if err != nil {
				resp.Body.Close()
				return nil, 0, invalidDocument(ep.host, "blob %s: %v", desc.Digest, err)
			}
			// A shorter range than asked is a truncation: the reader asks
			// again from where it ends.
			start, want = first, last+1-first
		}
		if resp.ContentLength != -1 && resp.ContentLength != want {
			resp.Body.Close()
			return nil, 0, fmt.Errorf("%s %q: mismatch Content-Length", resp.Request.Method, resp.Request.URL.Redacted())
		}
		if err := checkContentDigest(resp, desc.Digest); err != nil {
			resp.Body.Close()
			return nil, 0, err
		}
		return resp.Body, start, nil
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, 0, fmt.Errorf("%s: not found%.0w", desc.Digest, errdefs.ErrNotFound)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, 0, transport.StatusError(http.MethodGet, resp, body, ep.host)
}

// headBlob asks (HEAD) whether the repository has blob d: its size when
// it has. Missing: errdefs.ErrNotFound.
func (r *Repository) headBlob(ctx context.Context, ep *repoEndpoint, d digest.Digest) (int64, error) {
	ctx = transport.WithRepositoryScope(ctx, ep.host, r.path, transport.ActionPull)
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, r.blobURL(ep, d), nil)
	if err != nil {
		return 0, err
	}
	resp, err := ep.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		if resp.ContentLength == -1 {
			return 0, fmt.Errorf("%s %q: unknown response Content-Length", resp.Request.Method, resp.Request.URL.Redacted())
		}
		if err := checkContentDigest(resp, d); err != nil {
			return 0, err
		}
		return resp.ContentLength, nil
	case http.StatusNotFound:
		return 0, fmt.Errorf("%s: not found%.0w", d, errdefs.ErrNotFound)
	}
	return 0, transport.StatusError(http.MethodHead, resp, nil, ep.host)
}

// checkContentDigest: a Docker-Content-Digest, when given, names want.
func checkContentDigest(resp *http.Response, want digest.Digest) error {
	h := resp.Header.Get("Docker-Content-Digest")
	if h == "" {
		return nil
	}
	got, err := digest.Parse(h)
	if err != nil {
		return fmt.Errorf("%s %q: invalid response header: `Docker-Content-Digest: %s`", resp.Request.Method, resp.Request.URL.Redacted(), h)
	}
	if got != want {
		return fmt.Errorf("%s %q: invalid response; digest mismatch in Docker-Content-Digest: received %q when expecting %q", resp.Request.Method, resp.Request.URL.Redacted(), got, want)
	}
	return nil
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
	body *resumingBody
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
