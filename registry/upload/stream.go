package upload

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/ctxio"
	"github.com/wharfproject/wharf/registry/transport"
)

// upload sends the blob into the session and completes it: a PATCH
// streaming the bytes from open (chunked: memory stays at net/http's copy
// buffer whatever the blob's size, and nothing is written locally), then a
// PUT naming the digest, which the registry checks before it commits. It
// returns the session as the registry last named it: a registry that keeps
// its offset in the Location (distribution's _state) refuses a DELETE
// made with an older one.
//
// A PATCH that breaks is resumed (resume.go): the registry is asked
// for its offset, the source reopened there, and another PATCH sends the
// rest — at most maxStalledPatches in a row that move nothing, at most
// MaxPatchesPerBlob in all. An answer that cannot be trusted returns
// errRestartUpload: the caller cancels this session and starts another.
//
// The bytes are verified once before the PUT: by the source itself when it
// verifies itself (verifiesItself), else by hashing them as they are sent
// (hashCheckpoints); a resume of a self-verifying source hashes its first
// bytes, read again, then everything sent (hashPrefix).
//
// PATCH then PUT rather than one PUT with the body, as docker, crane and
// skopeo upload: a source that breaks or lies (its verifying reader fails
// at the end) then ends the PATCH cleanly and the blob is never committed.
// A PUT with the body must be aborted mid-request instead, and the
// registry saves the partial upload under an offset the DELETE that
// follows does not know, so the session stays open. A blob small enough
// to be read and verified first (Options.WholeMax) does not come
// here: putWhole (whole.go) sends it in one PUT.
func (up *uploader) upload(ctx context.Context, session *url.URL, desc ocispec.Descriptor, open Opener) (*url.URL, error) {
	if open == nil {
		return session, fmt.Errorf("registry %s lacks blob %s and no content was given%.0w", up.t.Host(), desc.Digest, errdefs.ErrFailedPrecondition)
	}
	sum, err := newHashCheckpoints(desc, up.newHash)
	if err != nil {
		return session, err
	}
	var acked int64 // the offset the registry last reported
	stalls, wait, resumed := 0, up.minWait, false
	// selfVerified: the source opened at 0 proves desc at its end, so sum
	// hashes nothing (one SHA-256 pass, the source's); the first resume
	// ends it. ended: the last PATCH's source was read to its clean end.
	var selfVerified, ended bool
	for patches := 1; ; patches++ {
		rc, err := openAt(ctx, open, sum, acked)
		if err != nil {
			return session, err
		}
		src := &uploadBody{r: rc, left: desc.Size - acked, h: sum}
		if patches == 1 && verifiesItself(rc, desc.Digest) {
			selfVerified, src.h = true, nil
		}
		next, status, perr := up.patch(ctx, session, src)
		srcErr := src.detach()
		rc.Close()
		sent := desc.Size - src.left // bytes handed to the PATCHes so far
		ended = src.ended
		if next != nil {
			session = next
		}
		if srcErr != nil {
			return session, srcErr // the source's failure: nothing is committed
		}
		if perr == nil {
			break
		}
		if !resumablePatch(ctx, status, perr) || patches == MaxPatchesPerBlob {
			return session, perr
		}
		// Wait first, then ask: distribution writes what it kept of the
		// broken PATCH when its handler ends, which may be after the
		// answer the proxy or the connection gave.
		if err := ctxio.Sleep(ctx, wait); err != nil {
			return session, perr
		}
		wait = min(2*wait, up.maxWait)
		st, serr := up.uploadStatusOf(ctx, session, desc.Size)
		if serr != nil {
			up.log.WithError(serr).Debug("asking an upload's offset failed")
			return session, perr
		}
		if st.location != nil {
			session = st.location
		}
		if st.offset < acked || st.offset > sent {
			return session, fmt.Errorf("registry %s: upload of %s at offset %d after a failed PATCH, with %d kept before and %d sent: %w%.0w",
				up.t.Host(), desc.Digest, st.offset, acked, sent, perr, errRestartUpload)
		}
		if st.offset > acked {
			stalls, wait = 0, up.minWait
		} else if stalls++; stalls == maxStalledPatches {
			return session, perr
		}
		up.log.WithError(perr).Debugf("resuming the upload of %s at %d of %d bytes", desc.Digest, st.offset, desc.Size)
		acked, resumed = st.offset, true
		if selfVerified {
			// What the registry kept of the self-verified reader was
			// never verified (the reader broke before its end): the
			// source's first acked bytes are read again and hashed, not
			// sent, and from now on sum hashes the whole stream.
			if err := hashPrefix(ctx, open, sum, acked); err != nil {
				return session, err
			}
			selfVerified = false
		}
	}
	switch {
	case selfVerified && !ended:
		// The registry answered before the body's end: the source's
		// check at its end never ran.
		return session, fmt.Errorf("registry %s took the upload of %s before its end%.0w", up.t.Host(), desc.Digest, transport.ErrUpstream)
	case selfVerified:
	default:
		if got := sum.digest(); got != desc.Digest {
			// The source's fault (a store file or SRC's bytes), not DST's.
			return session, fmt.Errorf("blob source: the bytes read for %s hash to %s%.0w%.0w", desc.Digest, got, transport.ErrDigestMismatch, errdefs.ErrDataLoss)
		}
	}

	u := *session
	q := u.Query()
	q.Set("digest", desc.Digest.String())
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), http.NoBody)
	if err != nil {
		return session, err
	}
	resp, err := up.t.Do(req)
	if err != nil {
		return session, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
	if resp.StatusCode == http.StatusNotFound {
		// A PUT whose answer was lost after the registry committed the
		// blob is sent again by the transport (a bodiless PUT is
		// idempotent to it), and the replay finds the session closed:
		// 404 BLOB_UPLOAD_UNKNOWN. The blob may well be there, under its
		// digest, which the registry checked at the first PUT: one HEAD
		// says (the fault campaign found this failing a push).
		if size, herr := up.t.HeadBlob(ctx, desc.Digest); herr == nil && size == desc.Size {
			return session, nil
		}
	}
	if resp.StatusCode != http.StatusCreated {
		err := transport.StatusError(http.MethodPut, resp, b, up.t.Host())
		if resumed && resp.StatusCode == http.StatusBadRequest {
			// The bytes were verified as sent: a registry that refuses
			// them after a resume put some twice (an offset one byte
			// short, as distribution's "0-0" allows) or lost some.
			return session, fmt.Errorf("after a resumed upload: %w%.0w", err, errRestartUpload)
		}
		return session, err
	}
	return session, nil
}

// patch sends src into session: the session as the answer names it (nil
// when it names none), the answer's status (0 without one) and the error.
func (up *uploader) patch(ctx context.Context, session *url.URL, src *uploadBody) (*url.URL, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, session.String(), src)
	if err != nil {
		return nil, 0, err
	}
	req.ContentLength = -1 // chunked: a failing source ends the request cleanly
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := up.t.Do(req)
	if err != nil {
		return nil, 0, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent {
		return nil, resp.StatusCode, transport.StatusError(http.MethodPatch, resp, b, up.t.Host())
	}
	next, _ := sessionURL(resp)
	return next, resp.StatusCode, nil
}

// uploadBody passes at most size bytes of the source and ends cleanly
// (io.EOF) whatever happens to it, keeping its failure: a source that
// breaks, ends early, or has more bytes, or whose verifying reader refuses
// the bytes at the end. The caller then cancels the session instead of
// committing it.
//
// net/http may still read a body after the request returned (RoundTrip's
// contract): detach ends the reads, waiting for one under way, before the
// caller looks at what was sent or closes the source.
type uploadBody struct {
	r     io.Reader
	left  int64
	h     io.Writer // every byte passed on, in order (hashCheckpoints); nil: r verifies itself
	err   error
	ended bool // r ended cleanly at left == 0

	mu       sync.Mutex
	detached bool
}

// detach makes every later Read end at once, and returns the source's
// failure, if any.
func (b *uploadBody) detach() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.detached = true
	return b.err
}

func (b *uploadBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil || b.detached {
		return 0, io.EOF
	}
	if b.left <= 0 {
		b.err = endsAtSize(b.r)
		b.ended = b.err == nil
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	// Fill p before passing it on: a chunked request flushes every piece
	// it is given as one chunk and one write, and a network source hands
	// over a few KiB at a time.
	n, err := 0, error(nil)
	for n < len(p) && err == nil {
		var m int
		m, err = b.r.Read(p[n:])
		n += m
	}
	b.left -= int64(n)
	if b.h != nil {
		b.h.Write(p[:n])
	}
	switch {
	case err == io.EOF && b.left > 0:
		b.err = fmt.Errorf("blob source ended %d bytes early: %w%.0w", b.left, io.ErrUnexpectedEOF, errdefs.ErrDataLoss)
	case err == io.EOF:
		b.err = endsAtSize(b.r) // nil: a reader at EOF stays there
		b.ended = b.err == nil
	case err != nil:
		b.err = err
	}
	return n, nil
}

// verifiesItself says whether rc returns an error in place of io.EOF
// unless its bytes are exactly the blob d (FetchBlob's reader, whose
// VerifiedDigest pull's content store relies on the same way).
func verifiesItself(rc io.Reader, d digest.Digest) bool {
	v, ok := rc.(interface{ VerifiedDigest() digest.Digest })
	return ok && v.VerifiedDigest() == d
}

// endsAtSize reads r to its end: nil when it ends cleanly there, its error,
// or an error when it has more bytes than declared.
func endsAtSize(r io.Reader) error {
	var one [1]byte
	for {
		n, err := r.Read(one[:])
		switch {
		case n > 0:
			return fmt.Errorf("blob source has more bytes than its descriptor says%.0w", errdefs.ErrDataLoss)
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
}
