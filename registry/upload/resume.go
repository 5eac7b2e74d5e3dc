package upload

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/transport"
)

// Resuming an upload whose PATCH failed. The registry is asked
// how much it kept (GET on the session: 204, Range: 0-<last byte>, and a
// fresh Location), the source is reopened there, and a new PATCH carries
// the rest. What the registry says is checked against what was sent: an
// offset that goes back, or past the bytes handed to the PATCH, restarts
// the session from zero (DELETE, POST), once.
const (
	// maxStalledPatches: consecutive failed PATCHes after which the
	// registry's offset has not moved. A moving offset resets the count
	// (and the backoff): a link that cuts every 3 MB still gets an 8 GB
	// layer through, one that takes nothing gives up after 3 tries.
	maxStalledPatches = 3
	// MaxPatchesPerBlob bounds the PATCHes of one session whatever the
	// progress: a registry taking 1 byte per PATCH must not make 8 M of
	// them. 16 covers the fault campaign's 5 cuts per blob three times.
	MaxPatchesPerBlob = 16
	// MaxRestarts: sessions started over from zero after the
	// registry's answer could not be trusted (an offset out of bounds, a
	// digest refused after a resume). One: a second would meet the same
	// registry.
	MaxRestarts = 1
	// resumeMinWait, resumeMaxWait: the backoff between a failed PATCH and
	// the next, doubling from 250 ms (the transport's retry base) to 4 s,
	// back to 250 ms when the offset moved (Options.ResumeWait shortens
	// both in tests).
	resumeMinWait = 250 * time.Millisecond
	resumeMaxWait = 4 * time.Second
	// minCheckpointEvery: the hash state is saved every max(1 MiB,
	// size/64) bytes sent, so that a resume re-reads at most that much of
	// the source (not re-sent: hashed only) and a blob keeps at most ~64
	// states of ~110 bytes each.
	minCheckpointEvery = 1 << 20
	maxCheckpoints     = 64
)

// errRestartUpload marks an upload that is to start over in a new session.
var errRestartUpload = errors.New("upload restarted")

// uploadStatus is the registry's answer to GET on an upload session: the
// offset the next byte goes to, and the session's URL from now on (nil:
// unchanged).
type uploadStatus struct {
	offset   int64
	location *url.URL
}

// parseUploadRange reads an upload's Range header ("0-<last byte>", or
// "bytes=0-<last>"): the offset of the next byte. "0-0" is taken as 0
// bytes: distribution writes it for an empty session as for a 1-byte one,
// and resending a byte is caught (the registry refuses the digest and the
// session restarts) where skipping one is not. The range must start at 0
// and end within the blob (size bytes: an offset of size says the registry
// has it all, the answer to the PATCH was lost).
func parseUploadRange(v string, size int64) (int64, error) {
	s := strings.TrimSpace(v)
	s = strings.TrimPrefix(s, "bytes=")
	first, last, ok := strings.Cut(s, "-")
	if !ok || first != "0" || last == "" || len(last) > 19 {
		return 0, fmt.Errorf("bad upload Range %q", v)
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad upload Range %q", v)
		}
	}
	end, err := strconv.ParseInt(last, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad upload Range %q", v)
	}
	if end == 0 {
		return 0, nil
	}
	if end >= size {
		return 0, fmt.Errorf("upload Range %q is beyond the blob's %d bytes", v, size)
	}
	return end + 1, nil
}

// parseUploadStatus reads the status of a session (its Range and
// Location); req is the request it answers (a relative Location resolves
// against it).
func parseUploadStatus(header http.Header, req *url.URL, size int64) (uploadStatus, error) {
	if _, ok := header["Range"]; !ok {
		return uploadStatus{}, fmt.Errorf("no Range in the upload status")
	}
	off, err := parseUploadRange(header.Get("Range"), size)
	if err != nil {
		return uploadStatus{}, err
	}
	st := uploadStatus{offset: off}
	if l := header.Get("Location"); l != "" {
		u, err := uploadLocation(l, req)
		if err != nil {
			return uploadStatus{}, err
		}
		st.location = u
	}
	return st, nil
}

// uploadStatusOf asks the registry where session stands.
func (up *uploader) uploadStatusOf(ctx context.Context, session *url.URL, size int64) (uploadStatus, error) {
	resp, err := up.getSession(ctx, session)
	if err != nil {
		return uploadStatus{}, err
	}
	st, err := parseUploadStatus(resp.Header, resp.Request.URL, size)
	if err != nil {
		return uploadStatus{}, transport.InvalidDocument(up.t.Host(), "upload status: %v", err)
	}
	return st, nil
}

// currentLocation is the session's Location as the registry names it now
// (GET on the session), nil when it names none.
func (up *uploader) currentLocation(ctx context.Context, session *url.URL) *url.URL {
	resp, err := up.getSession(ctx, session)
	if err != nil {
		return nil
	}
	loc, err := sessionURL(resp)
	if err != nil {
		return nil
	}
	return loc
}

// getSession is GET on an upload session: the answer (its body read and
// closed; its header and request remain) when it is 200 or 204, else the
// classified error.
func (up *uploader) getSession(ctx context.Context, session *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, session.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := up.t.Do(req)
	if err != nil {
		return nil, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		return nil, transport.StatusError(http.MethodGet, resp, b, up.t.Host())
	}
	return resp, nil
}

// resumablePatch says whether a PATCH that failed with err (answer: the
// status, 0 without one) may have left bytes at the registry worth asking
// for: a broken or timed-out connection, a 5xx, a 408 or 416. A refusal
// (401, 403, 404: the session is gone) is not.
func resumablePatch(ctx context.Context, status int, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if status == 0 {
		return err != nil && !errors.Is(err, context.Canceled)
	}
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusRequestedRangeNotSatisfiable
}

// hashCheckpoints hashes the bytes sent, in order, and keeps the hash's
// state every `every` bytes: a resume at offset N restores the last state
// at or before N and hashes the source from there to N without sending it.
// The digest of the whole stream is checked before the PUT, so a source
// reopened at an offset (a store file, a Range GET) is verified like one
// read from the start.
type hashCheckpoints struct {
	alg   digest.Algorithm
	h     hash.Hash
	n     int64 // bytes hashed
	every int64
	saved []checkpoint
	// newHash makes the hash, and a fresh one at a rewind (Options.Hash).
	newHash func(digest.Algorithm) hash.Hash
}

type checkpoint struct {
	at    int64
	state []byte
}

func newHashCheckpoints(desc ocispec.Descriptor, newHash func(digest.Algorithm) hash.Hash) (*hashCheckpoints, error) {
	alg := desc.Digest.Algorithm()
	if !alg.Available() {
		return nil, fmt.Errorf("unsupported digest algorithm in %q%.0w", desc.Digest, errdefs.ErrInvalidArgument)
	}
	return &hashCheckpoints{alg: alg, h: newHash(alg), every: max(minCheckpointEvery, desc.Size/maxCheckpoints), newHash: newHash}, nil
}

func (c *hashCheckpoints) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		next := (c.n/c.every + 1) * c.every
		k := int64(len(p))
		if c.n+k > next {
			k = next - c.n
		}
		c.h.Write(p[:k])
		c.n += k
		p = p[k:]
		if c.n == next {
			if m, ok := c.h.(encoding.BinaryMarshaler); ok {
				if st, err := m.MarshalBinary(); err == nil {
					c.saved = append(c.saved, checkpoint{c.n, st})
				}
			}
		}
	}
	return written, nil
}

// rewind puts the hash back at off when it is there, else at the last
// checkpoint at or before off (0 at worst), and forgets those after it:
// the source is to be reread from the returned offset.
func (c *hashCheckpoints) rewind(off int64) int64 {
	if c.n == off {
		return off // the hash stands at off already
	}
	for i := len(c.saved) - 1; i >= 0; i-- {
		cp := c.saved[i]
		if cp.at > off {
			continue
		}
		h := c.newHash(c.alg)
		if u, ok := h.(encoding.BinaryUnmarshaler); ok && u.UnmarshalBinary(cp.state) == nil {
			c.h, c.n, c.saved = h, cp.at, c.saved[:i+1]
			return cp.at
		}
	}
	c.h, c.n, c.saved = c.newHash(c.alg), 0, nil
	return 0
}

func (c *hashCheckpoints) digest() digest.Digest { return digest.NewDigest(c.alg, c.h) }

// openAt opens the source at off for a PATCH: reopened at the checkpoint
// at or before off, the bytes up to off hashed and dropped.
func openAt(ctx context.Context, open Opener, sum *hashCheckpoints, off int64) (io.ReadCloser, error) {
	from := sum.rewind(off)
	rc, err := open(ctx, from)
	if err != nil {
		return nil, err
	}
	if err := hashUpTo(sum, rc, from, off); err != nil {
		rc.Close()
		return nil, err
	}
	return rc, nil
}

// hashPrefix hashes the source's first off bytes into sum, sending none:
// the first resume of a source that verified itself (Transfer hashed
// none of what it sent). The source is read from 0 up to off only; openAt
// then opens it at off for the rest (copy: a Range GET). The prefix is
// read twice, on a resume only.
func hashPrefix(ctx context.Context, open Opener, sum *hashCheckpoints, off int64) error {
	rc, err := open(ctx, 0)
	if err != nil {
		return err
	}
	defer rc.Close()
	return hashUpTo(sum, rc, 0, off)
}

// hashUpTo hashes rc, which stands at byte from of the source, up to byte
// off into sum, sending none; a source that ends before is DataLoss.
func hashUpTo(sum *hashCheckpoints, rc io.Reader, from, off int64) error {
	n, err := io.CopyN(sum, rc, off-from)
	if err == io.EOF {
		err = fmt.Errorf("blob source ended at %d bytes, resuming at %d: %w%.0w", from+n, off, io.ErrUnexpectedEOF, errdefs.ErrDataLoss)
	}
	return err
}
