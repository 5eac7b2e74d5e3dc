package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/transport"
)

// The one blob-transfer path of push (bytes from the local store) and copy
// (bytes streamed from another registry): the blob exists at the
// destination → nothing; it is known to be in another repository of the
// destination registry → a cross-repository mount; else an upload of the
// bytes the caller opens.
//
// Own requests rather than a library's blob push (oras-go's
// Blobs().Push/Mount, which wharf used before: those open an upload session and, when the PUT
// fails, leave it open on the registry (oras-go never sends DELETE)), and a
// refused mount's session can only carry the upload, so a second mount
// source cannot be tried without abandoning it. Here every session opened
// is either completed or cancelled with DELETE.

// maxMountSources bounds the mounts tried per blob: each refused one costs
// a POST and a DELETE, and a blob absent from the first three repositories
// known to hold it is unlikely to be in a fourth (a registry refuses a
// mount for the reasons that refuse them all: no pull access, mounts
// disabled, the blob garbage-collected).
const maxMountSources = 3

// cancelUploadTimeout bounds the DELETE of an upload session that failed:
// it is sent after the caller's context may be gone, and a registry that
// does not answer in 10 s would not have answered in 30 either.
const cancelUploadTimeout = 10 * time.Second

// BlobTransfer is how a blob reached the destination.
type BlobTransfer int

// How TransferBlob made the registry have a blob.
const (
	BlobExisted  BlobTransfer = iota // HEAD found it: nothing sent
	BlobMounted                      // cross-repository mount: no bytes sent
	BlobUploaded                     // the bytes were uploaded
)

// BlobOpener opens the bytes of a blob for upload from offset on (0: the
// whole blob). TransferBlob calls it only when the registry needs the
// bytes: once from 0, and again from a later offset when a PATCH broke and
// the upload resumes (upload_resume.go) — the store's file seeks there,
// SRC's blob is asked with Range (OpenBlobAt). No byte is committed (PUT)
// before the whole stream is verified to be desc, and the destination
// checks it again (the PUT names it). The reader opened at 0 verifies
// itself when it says VerifiedDigest() == desc.Digest (FetchBlob's: it
// returns an error in place of io.EOF unless its bytes are desc), and
// TransferBlob then hashes nothing: one SHA-256 pass for a copy. Any other
// source (the store's file) is hashed as it is sent, and so is every
// source once an upload resumed (upload_resume.go).
type BlobOpener func(ctx context.Context, offset int64) (io.ReadCloser, error)

// TransferBlob makes this repository hold desc. mountFrom are repository
// paths on this registry the caller knows hold the blob (copy: the source
// repository; push: the repositories the image was pulled from or pushed
// to); the repositories where this daemon has read or written the blob come
// first. At most maxMountSources mounts are tried; every refused mount's
// session but the last is cancelled, and the last carries the upload. from
// is the repository a mounted blob came from.
func (r *Repository) TransferBlob(ctx context.Context, desc ocispec.Descriptor, mountFrom []string, open BlobOpener) (how BlobTransfer, from string, err error) {
	if err := validateDescriptor(desc); err != nil {
		return 0, "", err
	}
	exists, err := r.BlobExists(ctx, desc)
	if err != nil {
		return 0, "", err
	}
	if exists {
		r.svc.blobs.add(desc.Digest, r.info.Index.Name, r.path)
		return BlobExisted, "", nil
	}
	ep := r.upstream
	base := transport.WithRepositoryScope(ctx, ep.host, r.path, transport.ActionPull, transport.ActionPush)
	uctx := base
	var session *url.URL
	sources := r.mountSources(desc.Digest, mountFrom)
	for i, src := range sources {
		mctx := transport.WithRepositoryScope(base, ep.host, src, transport.ActionPull)
		mounted, loc, err := r.startUpload(mctx, ep, desc.Digest, src)
		if err != nil {
			return 0, "", err
		}
		if mounted {
			r.svc.blobs.add(desc.Digest, r.info.Index.Name, r.path)
			return BlobMounted, src, nil
		}
		if i < len(sources)-1 {
			r.cancelUpload(mctx, ep, loc)
			continue
		}
		session, uctx = loc, mctx // the last refusal's session carries the upload
	}
	// A small blob is read and verified before any session is opened
	// (upload_whole.go): a source that lies sends nothing.
	var whole []byte
	small := open != nil && desc.Size <= r.svc.wholeUploadMax
	if small {
		if whole, err = readWhole(ctx, open, desc); err != nil {
			r.cancelUpload(uctx, ep, session) // a refused mount's, if any
			return 0, "", err
		}
	}
	for restarts := 0; ; restarts++ {
		if session == nil {
			if _, session, err = r.startUpload(uctx, ep, "", ""); err != nil {
				return 0, "", err
			}
		}
		var last *url.URL
		if small {
			last, err = r.putWhole(uctx, ep, session, desc, whole)
		} else {
			last, err = r.upload(uctx, ep, session, desc, open)
		}
		if err == nil {
			break
		}
		r.cancelUpload(uctx, ep, last)
		if !errors.Is(err, errRestartUpload) || restarts == maxUploadRestarts || ctx.Err() != nil {
			return 0, "", err
		}
		r.svc.log.WithError(err).Debugf("starting the upload of %s over", desc.Digest)
		session = nil
	}
	r.svc.blobs.add(desc.Digest, r.info.Index.Name, r.path)
	return BlobUploaded, "", nil
}

// mountSources are the repositories to try a mount from: where this daemon
// read or wrote the blob on this registry, most recent first, then the
// caller's; never this repository; at most maxMountSources.
func (r *Repository) mountSources(d digest.Digest, callers []string) []string {
	seen := map[string]bool{r.path: true}
	var out []string
	for _, p := range append(r.svc.blobs.on(d, r.info.Index.Name), callers...) {
		if len(out) == maxMountSources {
			break
		}
		if !seen[p] && validateRepositoryPath(p) == nil {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func (r *Repository) uploadsURL(ep *repoEndpoint) string {
	return ep.baseURL() + "/v2/" + r.path + "/blobs/uploads/"
}

// startUpload opens an upload session (POST …/blobs/uploads/), asking for a
// mount of d from fromRepo when given. mounted is true when the registry
// mounted the blob (201); else loc is the session (202).
func (r *Repository) startUpload(ctx context.Context, ep *repoEndpoint, d digest.Digest, fromRepo string) (mounted bool, loc *url.URL, err error) {
	u := r.uploadsURL(ep)
	if d != "" {
		u += "?" + url.Values{"mount": {d.String()}, "from": {fromRepo}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return false, nil, err
	}
	resp, err := ep.client.Do(req)
	if err != nil {
		return false, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	switch {
	case resp.StatusCode == http.StatusCreated && d != "":
		return true, nil, nil
	case resp.StatusCode == http.StatusAccepted:
	default:
		return false, nil, transport.StatusError(http.MethodPost, resp, body, ep.host)
	}
	loc, err = sessionURL(resp)
	if err != nil {
		return false, nil, invalidDocument(ep.host, "upload session: %v", err)
	}
	return false, loc, nil
}

// sessionURL is the upload session's Location, resolved against the request.
func sessionURL(resp *http.Response) (*url.URL, error) {
	l := resp.Header.Get("Location")
	if l == "" {
		return nil, fmt.Errorf("no Location in the answer")
	}
	return uploadLocation(l, resp.Request.URL)
}

// uploadLocation is the one reading of an upload session's Location (the
// POST's answer, a PATCH's, a status GET's): resolved against the request
// it answers, so that a path stays on the registry that sent it, and
// refused unless it is an http or https URL with a host — the next
// request goes there, and "http:/v2/…" would resolve to no host at all.
func uploadLocation(l string, req *url.URL) (*url.URL, error) {
	u, err := req.Parse(l)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("bad Location %q", l)
	}
	return u, nil
}

// upload sends the blob into the session and completes it: a PATCH
// streaming the bytes from open (chunked: memory stays at net/http's copy
// buffer whatever the blob's size, and nothing is written locally), then a
// PUT naming the digest, which the registry checks before it commits. It
// returns the session as the registry last named it: a registry that keeps
// its offset in the Location (distribution's _state) refuses a DELETE
// made with an older one.
//
// A PATCH that breaks is resumed (upload_resume.go): the registry is asked
// for its offset, the source reopened there, and another PATCH sends the
// rest — at most maxStalledPatches in a row that move nothing, at most
// maxPatchesPerBlob in all. An answer that cannot be trusted returns
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
// to be read and verified first (Service.wholeUploadMax) does not come
// here: putWhole (upload_whole.go) sends it in one PUT.
func (r *Repository) upload(ctx context.Context, ep *repoEndpoint, session *url.URL, desc ocispec.Descriptor, open BlobOpener) (*url.URL, error) {
	if open == nil {
		return session, fmt.Errorf("registry %s lacks blob %s and no content was given%.0w", ep.host, desc.Digest, errdefs.ErrFailedPrecondition)
	}
	sum, err := newHashCheckpoints(desc)
	if err != nil {
		return session, err
	}
	var acked int64 // the offset the registry last reported
	stalls, wait, resumed := 0, resumeMinWait, false
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
		next, status, perr := r.patch(ctx, ep, session, src)
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
		if !resumablePatch(ctx, status, perr) || patches == maxPatchesPerBlob {
			return session, perr
		}
		// Wait first, then ask: distribution writes what it kept of the
		// broken PATCH when its handler ends, which may be after the
		// answer the proxy or the connection gave.
		if err := sleepCtx(ctx, wait); err != nil {
			return session, perr
		}
		wait = min(2*wait, resumeMaxWait)
		st, serr := r.uploadStatusOf(ctx, ep, session, desc.Size)
		if serr != nil {
			r.svc.log.WithError(serr).Debug("asking an upload's offset failed")
			return session, perr
		}
		if st.location != nil {
			session = st.location
		}
		if st.offset < acked || st.offset > sent {
			return session, fmt.Errorf("registry %s: upload of %s at offset %d after a failed PATCH, with %d kept before and %d sent: %w%.0w",
				ep.host, desc.Digest, st.offset, acked, sent, perr, errRestartUpload)
		}
		if st.offset > acked {
			stalls, wait = 0, resumeMinWait
		} else if stalls++; stalls == maxStalledPatches {
			return session, perr
		}
		r.svc.log.WithError(perr).Debugf("resuming the upload of %s at %d of %d bytes", desc.Digest, st.offset, desc.Size)
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
		return session, fmt.Errorf("registry %s took the upload of %s before its end%.0w", ep.host, desc.Digest, transport.ErrUpstream)
	case selfVerified:
	default:
		if got := sum.digest(); got != desc.Digest {
			// The source's fault (a store file or SRC's bytes), not DST's.
			return session, fmt.Errorf("blob source: the bytes read for %s hash to %s%.0w%.0w", desc.Digest, got, ErrDigestMismatch, errdefs.ErrDataLoss)
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
	resp, err := ep.client.Do(req)
	if err != nil {
		return session, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if resp.StatusCode == http.StatusNotFound {
		// A PUT whose answer was lost after the registry committed the
		// blob is sent again by the transport (a bodiless PUT is
		// idempotent to it), and the replay finds the session closed:
		// 404 BLOB_UPLOAD_UNKNOWN. The blob may well be there, under its
		// digest, which the registry checked at the first PUT: one HEAD
		// says (the fault campaign found this failing a push).
		if size, herr := r.headBlob(ctx, ep, desc.Digest); herr == nil && size == desc.Size {
			return session, nil
		}
	}
	if resp.StatusCode != http.StatusCreated {
		err := transport.StatusError(http.MethodPut, resp, b, ep.host)
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
func (r *Repository) patch(ctx context.Context, ep *repoEndpoint, session *url.URL, src *uploadBody) (*url.URL, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, session.String(), src)
	if err != nil {
		return nil, 0, err
	}
	req.ContentLength = -1 // chunked: a failing source ends the request cleanly
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := ep.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent {
		return nil, resp.StatusCode, transport.StatusError(http.MethodPatch, resp, b, ep.host)
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

// cancelUpload DELETEs a session that will not be completed, so that no
// upload is left open on the registry. Best effort: the registry's own
// purge removes what this misses. distribution refuses (416) a DELETE
// whose Location names an older offset than the session's — a PATCH that
// broke moved it without saying — so a refusal asks the session's
// Location (GET) and tries once more.
func (r *Repository) cancelUpload(ctx context.Context, ep *repoEndpoint, session *url.URL) {
	if session == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelUploadTimeout)
	defer cancel()
	status := r.deleteUpload(ctx, ep, session)
	if status == 0 || status < 300 || status == http.StatusNotFound {
		return
	}
	if loc := r.currentLocation(ctx, ep, session); loc != nil {
		r.deleteUpload(ctx, ep, loc)
	}
}

// deleteUpload sends the DELETE: the answer's status, 0 without one.
func (r *Repository) deleteUpload(ctx context.Context, ep *repoEndpoint, session *url.URL) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, session.String(), nil)
	if err != nil {
		return 0
	}
	resp, err := ep.client.Do(req)
	if err != nil {
		r.svc.log.WithError(err).Debug("cancelling an upload session failed")
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	return resp.StatusCode
}

// blobLocations is the distribution metadata dockerd keeps per blob: the
// repositories, per registry, where this daemon read the blob (pull, copy)
// or wrote it (push, copy), most recent first. It only picks mount sources,
// so losing it (it lives in memory; a restart empties it) costs an upload,
// never correctness. Bounded: maxLocationsPerBlob repositories per blob,
// maxBlobLocations blobs (beyond, the least recently used is forgotten).
type blobLocations struct {
	mu sync.Mutex
	m  *simplelru.LRU[digest.Digest, []blobLocation]
}

type blobLocation struct{ index, path string }

const (
	maxLocationsPerBlob = 8
	maxBlobLocations    = 1 << 16
)

func newBlobLocations() *blobLocations {
	return &blobLocations{m: mustLRU[digest.Digest, []blobLocation](maxBlobLocations)}
}

func (b *blobLocations) add(d digest.Digest, index, path string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	locs, _ := b.m.Get(d)
	l := blobLocation{index, path}
	out := []blobLocation{l}
	for _, o := range locs {
		if o != l && len(out) < maxLocationsPerBlob {
			out = append(out, o)
		}
	}
	b.m.Add(d, out)
}

// on lists the repositories on index known to hold d, most recent first.
func (b *blobLocations) on(d digest.Digest, index string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	locs, _ := b.m.Get(d)
	for _, l := range locs {
		if l.index == index {
			out = append(out, l.path)
		}
	}
	return out
}
