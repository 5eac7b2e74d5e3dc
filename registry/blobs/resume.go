// Package blobs is a blob's bytes as one registry endpoint serves them:
// the GET from an offset (Range) and the HEAD, each answer checked against
// the descriptor (Content-Length, Content-Range, Docker-Content-Digest),
// and the body reopened where it breaks (Open). Verifying the digest is
// the caller's: it reads through its hash, which survives reopenings.
// GetRange reads one single range [off, off+n) of a blob, and goes straight
// to the blob store the registry redirected to while that signed URL is
// valid (Locations).
//
// It speaks to the endpoint through Target, which package registry
// implements; below it are registry/transport (scopes, error classes) and
// internal/ctxio, never package registry.
package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/ctxio"
)

// How a blob download resumes. A body that breaks — a reset, a
// body cut short of the blob's size, a stall the transport's body watchdog
// ends (transport/timeouts.go) — is reopened with `Range: bytes=N-` from the
// N bytes already delivered, as dockerd and containerd's httpReadSeeker do.
// The digest is verified over the whole blob: the verifying reader above
// this one keeps its hash across reopenings.
//
// At most MaxReopens reopenings in a row without a byte between them, the
// first after ReopenBackoff and each next one after twice the wait:
// 250 ms, 0.5, 1, 2, 4 s — 7.75 s in all, longer than the few seconds a
// load balancer takes to move a connection, short beside the 30 s body
// window a stall has already cost. Any byte received resets the count, so a
// link that cuts every 3 MB still completes a 1 GB layer: what is bounded
// is the time without progress, not the number of cuts.
const (
	MaxReopens    = 5
	ReopenBackoff = 250 * time.Millisecond
)

// opener GETs the blob from byte off (off > 0: with a Range header) and
// returns the body and the offset its first byte has in the blob: off for a
// 206, 0 for a registry that ignored the Range and answered 200.
type opener func(ctx context.Context, off int64) (body io.ReadCloser, start int64, err error)

// resumingBody is the raw body of one blob, reopened where it broke. It
// delivers every byte of the blob from its first offset exactly once, in
// order: after a 200 to a Range request (a registry that ignores Range, or
// distribution's pull-through cache on a miss) it reads the blob from zero
// again and discards the bytes it had already delivered, so the consumer
// (the ingest, the progress bar) never goes back. On the happy path it adds
// one call and three comparisons per Read (make bench case 3).
type resumingBody struct {
	ctx     context.Context
	open    opener
	desc    ocispec.Descriptor
	host    string
	backoff time.Duration // ReopenBackoff; shorter in tests
	wait    func(ctx context.Context, d time.Duration) error

	body     io.ReadCloser // nil: to be reopened at off
	off      int64         // bytes of the blob delivered (or known, from a partial) so far
	skip     int64         // bytes of body to discard before delivering
	failures int           // reopenings since a byte last arrived
	last     error         // why the body was last dropped
	reopened int           // reopenings in all (tests, logs)
}

func newResumingBody(ctx context.Context, open opener, desc ocispec.Descriptor, host string, body io.ReadCloser, off, start int64) *resumingBody {
	return &resumingBody{ctx: ctx, open: open, desc: desc, host: host, backoff: ReopenBackoff, wait: ctxio.Sleep,
		body: body, off: off, skip: off - start}
}

func (b *resumingBody) Read(p []byte) (int, error) {
	for {
		if b.body == nil {
			if b.off >= b.desc.Size {
				return 0, io.EOF // a partial that held the whole blob
			}
			if err := b.reopen(); err != nil {
				return 0, err
			}
		}
		n, err := b.body.Read(p)
		if b.skip > 0 && n > 0 {
			d := int(min(b.skip, int64(n)))
			n = copy(p, p[d:n])
			b.skip -= int64(d)
		}
		b.off += int64(n)
		if n > 0 {
			b.failures = 0
		}
		if err == nil {
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err == io.EOF && b.off >= b.desc.Size && b.skip == 0 {
			return n, io.EOF // the verifying reader judges size and digest
		}
		if !b.resumable(err) {
			return n, err
		}
		b.last = err
		b.body.Close()
		b.body = nil
		if n > 0 {
			return n, nil
		}
	}
}

// resumable: a failure of the link, not an answer — the transport classes
// a reset, a cut or a stalled body Unavailable (classify.go); a clean EOF
// short of the blob's size is a truncation. The caller's own cancellation
// or deadline never is.
func (b *resumingBody) resumable(err error) bool {
	return err == io.EOF || LinkBroke(b.ctx, err)
}

// LinkBroke says a body broke because of the link (a reset, a cut, a stall),
// not because of an answer or the caller's own cancellation or deadline.
func LinkBroke(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errdefs.IsUnavailable(err)
}

// reopen waits out the backoff and GETs the rest of the blob, as often as
// the bound allows while the registry fails the same way.
func (b *resumingBody) reopen() error {
	for {
		if b.failures >= MaxReopens {
			return fmt.Errorf("registry %s: blob %s: no byte in %d reopenings at byte %d of %d: %w",
				b.host, b.desc.Digest, MaxReopens, b.off, b.desc.Size, b.last)
		}
		if err := b.wait(b.ctx, b.backoff<<b.failures); err != nil {
			return err
		}
		b.failures++
		b.reopened++
		body, start, err := b.open(b.ctx, b.off)
		if err == nil {
			b.body, b.skip = body, b.off-start
			return nil
		}
		if !b.resumable(err) {
			return err
		}
		b.last = err
	}
}

func (b *resumingBody) Close() error {
	if b.body == nil {
		return nil
	}
	return b.body.Close()
}

// parseContentRange parses a 206's `Content-Range: bytes FIRST-LAST/TOTAL`
// (RFC 9110 §14.4; TOTAL may be "*"), total -1 when unknown. Anything else —
// "bytes */N" (a 416's form), LAST < FIRST, signs, overflow — is an error.
func parseContentRange(s string) (first, last, total int64, err error) {
	bad := func() (int64, int64, int64, error) {
		return 0, 0, 0, fmt.Errorf("invalid Content-Range %q", truncate(s, 64))
	}
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return bad()
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return bad()
	}
	f, l, ok := strings.Cut(rng, "-")
	if !ok {
		return bad()
	}
	num := func(s string) (int64, bool) {
		if s == "" || s[0] < '0' || s[0] > '9' {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	if first, ok = num(f); !ok {
		return bad()
	}
	if last, ok = num(l); !ok || last < first {
		return bad()
	}
	total = -1
	if tot != "*" {
		if total, ok = num(tot); !ok || last >= total {
			return bad()
		}
	}
	return first, last, total, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
