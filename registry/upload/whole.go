package upload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/transport"
)

// Small blobs in two requests: POST (or the last refused mount's session),
// then one PUT ?digest= carrying the whole body — where the streamed path
// (upload) sends POST, PATCH, PUT. An image's config and its small layers
// are most of the blobs a sync moves: on the bench's first sync of 20
// images that is one request saved per blob uploaded.
//
// The PATCH exists so that a source that breaks or lies mid-body ends the
// request cleanly (stream.go, upload). A small blob does not need it: it
// is read whole into memory and verified BEFORE anything is sent, so the
// PUT's body cannot fail, and a lying source sends nothing and opens no
// session. What is left to fail is the PUT's transport; its session is
// then cancelled and the upload starts over once (errRestartUpload).
//
// regclient (regsync) sends every blob as one streamed PUT whatever its
// size (its blobMaxPut default is -1, "to support registries without
// chunked upload support") and falls back to chunked PATCHes only when
// the PUT failed and its reader can seek back; it does not verify the
// bytes before sending them. Here the bound is what can be verified first.

// DefaultWholeMax is the size up to which a blob goes in one PUT:
// 1 MiB. Each such upload holds the blob in memory until its PUT ends, and
// the transfers in flight are bounded by their callers: a sync moves 4
// images × 4 blobs (maxConcurrentSyncImages × maxConcurrentCopies in
// graph/distribution), a push 2 pools × 5 uploads, so 16 MiB per sync and
// 10 MiB per push at most. Larger blobs stream (memory stays at net/http's
// copy buffer whatever their size) and resume a broken PATCH.
const DefaultWholeMax = 1 << 20

// readWhole reads the blob from open into memory and verifies it: its
// size (a source that ends early or has more bytes fails) and its digest
// (by the source itself when it verifies itself, else hashed here). The
// errors are the streamed path's: the source's fault, data loss.
func (up *uploader) readWhole(ctx context.Context, open Opener, desc ocispec.Descriptor) ([]byte, error) {
	alg := desc.Digest.Algorithm()
	if !alg.Available() {
		return nil, fmt.Errorf("unsupported digest algorithm in %q%.0w", desc.Digest, errdefs.ErrInvalidArgument)
	}
	rc, err := open(ctx, 0)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	h := up.newHash(alg)
	src := &uploadBody{r: rc, left: desc.Size, h: h}
	self := verifiesItself(rc, desc.Digest)
	if self {
		src.h = nil // the reader proves desc at its clean end
	}
	b := make([]byte, desc.Size)
	n := 0
	for {
		// uploadBody ends with io.EOF whatever the source does and keeps
		// the source's failure (detach); it never passes more than
		// desc.Size bytes, so b is never outgrown.
		m, err := src.Read(b[n:])
		n += m
		if err != nil {
			break
		}
	}
	if err := src.detach(); err != nil {
		return nil, err
	}
	if self {
		return b, nil // detach is nil only once the reader ended cleanly, verified
	}
	if got := digest.NewDigest(alg, h); got != desc.Digest {
		return nil, fmt.Errorf("blob source: the bytes read for %s hash to %s%.0w%.0w", desc.Digest, got, transport.ErrDigestMismatch, errdefs.ErrDataLoss)
	}
	return b, nil
}

// putWhole completes session with one PUT carrying b, already verified to
// be desc. It returns the session as last named, for the caller's DELETE
// when it fails.
//
// The request's body can be sent again (GetBody): the transport answers a
// 401 and replays a PUT after a reset or a 5xx, as it does every
// rewindable PUT. A replay into a session that kept part of the cut
// attempt is refused — distribution answers 416 (the session's offset
// moved past the one its Location's _state names:
// UploadResumeSuite.TestACutSmallBlobPutRestartsAndLeavesNoSession);
// another registry appends and refuses the digest (400), or has dropped
// the session (404) — and each is a restart: a new session, the same
// bytes. A replay after a commit whose answer was lost finds the session
// closed (404) and the blob there: one HEAD says so.
func (up *uploader) putWhole(ctx context.Context, session *url.URL, desc ocispec.Descriptor, b []byte) (*url.URL, error) {
	u := *session
	q := u.Query()
	q.Set("digest", desc.Digest.String())
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), bytes.NewReader(b))
	if err != nil {
		return session, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := up.t.Do(req)
	if errors.Is(err, transport.ErrDigestMismatch) {
		// The receipt names another blob (transport's uploadCheck): the
		// registry's answer, which another session would repeat.
		return session, err
	}
	if err != nil {
		return session, fmt.Errorf("uploading %s: %w%.0w", desc.Digest, err, errRestartUpload)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
	switch resp.StatusCode {
	case http.StatusCreated:
		return session, nil
	case http.StatusNotFound:
		if size, herr := up.t.HeadBlob(ctx, desc.Digest); herr == nil && size == desc.Size {
			return session, nil
		}
		return session, fmt.Errorf("%w%.0w", transport.StatusError(http.MethodPut, resp, body, up.t.Host()), errRestartUpload)
	case http.StatusBadRequest, http.StatusRequestedRangeNotSatisfiable:
		// b hashes to desc: a refusal says the session held other bytes
		// beside them (400: digest invalid) or its offset moved (416).
		return session, fmt.Errorf("%w%.0w", transport.StatusError(http.MethodPut, resp, body, up.t.Host()), errRestartUpload)
	}
	return session, transport.StatusError(http.MethodPut, resp, body, up.t.Host())
}
