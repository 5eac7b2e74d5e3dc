// Package upload is the blob upload protocol of push and copy: a blob is
// made to exist in a repository by a HEAD (it is there), a
// cross-repository mount, or an upload session — POST, then one PUT for a
// small blob read and verified first (whole.go), else a streamed PATCH,
// resumed where it broke (resume.go), and a PUT naming the digest. Every
// session opened is either completed or cancelled with DELETE.
//
// It speaks to the destination through Target, which package registry
// implements over its repository's upstream endpoint; below it are
// registry/transport (the HTTP stack, the error classes) and
// internal/ctxio, never package registry.
package upload

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/containerd/errdefs"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/registry/transport"
)

// The one blob-transfer path of push (bytes from the local store) and copy
// (bytes streamed from another registry): the blob exists at the
// destination → nothing; it is known to be in another repository of the
// destination registry → a cross-repository mount; else an upload of the
// bytes the caller opens.
//
// Own requests rather than a library's blob push: oras-go's
// Blobs().Push/Mount open an upload session and, when the PUT fails, leave
// it open on the registry (oras-go never sends DELETE), and a refused
// mount's session can only carry the upload, so a second mount source
// cannot be tried without abandoning it. Here every session opened is
// either completed or cancelled with DELETE.

// MaxMountSources bounds the mounts tried per blob: each refused one costs
// a POST and a DELETE, and a blob absent from the first three repositories
// known to hold it is unlikely to be in a fourth (a registry refuses a
// mount for the reasons that refuse them all: no pull access, mounts
// disabled, the blob garbage-collected).
const MaxMountSources = 3

// cancelUploadTimeout bounds the DELETE of an upload session that failed:
// it is sent after the caller's context may be gone, and a registry that
// does not answer in 10 s would not have answered in 30 either.
const cancelUploadTimeout = 10 * time.Second

// How is how a blob reached the destination.
type How int

// How Transfer made the registry have a blob.
const (
	Existed  How = iota // HEAD found it: nothing sent
	Mounted             // cross-repository mount: no bytes sent
	Uploaded            // the bytes were uploaded
)

// Opener opens the bytes of a blob for upload from offset on (0: the
// whole blob). Transfer calls it only when the registry needs the
// bytes: once from 0, and again from a later offset when a PATCH broke and
// the upload resumes (resume.go) — the store's file seeks there,
// SRC's blob is asked with Range. No byte is committed (PUT)
// before the whole stream is verified to be desc, and the destination
// checks it again (the PUT names it). The reader opened at 0 verifies
// itself when it says VerifiedDigest() == desc.Digest (a registry blob
// reader that returns an error in place of io.EOF unless its bytes are
// desc), and Transfer then hashes nothing: one SHA-256 pass for a copy.
// Any other source (the store's file) is hashed as it is sent, and so is
// every source once an upload resumed (resume.go).
type Opener func(ctx context.Context, offset int64) (io.ReadCloser, error)

// Target is the destination repository as the upload speaks to it: its
// upstream endpoint (writes never go to a mirror).
type Target interface {
	// Host is the endpoint's host: scopes and errors name it.
	Host() string
	// BaseURL is the endpoint's scheme://host[/root], before /v2/.
	BaseURL() string
	// Path is the repository's path on the registry.
	Path() string
	// Do sends req through the endpoint's authorizing client (the one
	// HTTP stack: retries, classified errors).
	Do(req *http.Request) (*http.Response, error)
	// HeadBlob asks whether the repository has d: its size;
	// errdefs.ErrNotFound when it has not.
	HeadBlob(ctx context.Context, d digest.Digest) (int64, error)
}

// Options are an upload's settings, the Service's.
type Options struct {
	// WholeMax: blobs of at most this many bytes go in one PUT
	// (DefaultWholeMax, whole.go); -1: none.
	WholeMax int64
	// ResumeWait is the first wait after a broken PATCH (250 ms when
	// zero, doubling to 4 s); tests shorten it.
	ResumeWait time.Duration
	// Hash makes the hashes of the bytes sent (nil: the algorithm's); a
	// test counts what they hash.
	Hash func(digest.Algorithm) hash.Hash
	Log  *logrus.Entry
}

// uploader is one Transfer: its target and options.
type uploader struct {
	t        Target
	wholeMax int64
	minWait  time.Duration
	maxWait  time.Duration
	newHash  func(digest.Algorithm) hash.Hash
	log      *logrus.Entry
}

// Transfer makes t hold desc. sources are repository paths on the same
// registry to try a mount from, in order (the caller picks at most
// MaxMountSources); every refused mount's session but the last is
// cancelled, and the last carries the upload. from is the repository a
// mounted blob came from.
func Transfer(ctx context.Context, t Target, desc ocispec.Descriptor, sources []string, open Opener, opts Options) (how How, from string, err error) {
	up := &uploader{t: t, wholeMax: opts.WholeMax, minWait: resumeMinWait, maxWait: resumeMaxWait, newHash: opts.Hash, log: opts.Log}
	if opts.ResumeWait > 0 {
		up.minWait = opts.ResumeWait
		up.maxWait = min(up.maxWait, opts.ResumeWait<<4)
	}
	if up.newHash == nil {
		up.newHash = func(a digest.Algorithm) hash.Hash { return a.Hash() }
	}
	if up.log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		up.log = logrus.NewEntry(l)
	}
	switch _, err := t.HeadBlob(ctx, desc.Digest); {
	case err == nil:
		return Existed, "", nil
	case !errdefs.IsNotFound(err):
		return 0, "", err
	}
	base := transport.WithRepositoryScope(ctx, t.Host(), t.Path(), transport.ActionPull, transport.ActionPush)
	uctx := base
	var session *url.URL
	for i, src := range sources {
		mctx := transport.WithRepositoryScope(base, t.Host(), src, transport.ActionPull)
		mounted, loc, err := up.startUpload(mctx, desc.Digest, src)
		if err != nil {
			return 0, "", err
		}
		if mounted {
			return Mounted, src, nil
		}
		if i < len(sources)-1 {
			up.cancelUpload(mctx, loc)
			continue
		}
		session, uctx = loc, mctx // the last refusal's session carries the upload
	}
	// A small blob is read and verified before any session is opened
	// (whole.go): a source that lies sends nothing.
	var whole []byte
	small := open != nil && desc.Size <= up.wholeMax
	if small {
		if whole, err = up.readWhole(ctx, open, desc); err != nil {
			up.cancelUpload(uctx, session) // a refused mount's, if any
			return 0, "", err
		}
	}
	for restarts := 0; ; restarts++ {
		if session == nil {
			if _, session, err = up.startUpload(uctx, "", ""); err != nil {
				return 0, "", err
			}
		}
		var last *url.URL
		if small {
			last, err = up.putWhole(uctx, session, desc, whole)
		} else {
			last, err = up.upload(uctx, session, desc, open)
		}
		if err == nil {
			break
		}
		up.cancelUpload(uctx, last)
		if !errors.Is(err, errRestartUpload) || restarts == MaxRestarts || ctx.Err() != nil {
			return 0, "", err
		}
		up.log.WithError(err).Debugf("starting the upload of %s over", desc.Digest)
		session = nil
	}
	return Uploaded, "", nil
}

func (up *uploader) uploadsURL() string {
	return up.t.BaseURL() + "/v2/" + up.t.Path() + "/blobs/uploads/"
}

// startUpload opens an upload session (POST …/blobs/uploads/), asking for a
// mount of d from fromRepo when given. mounted is true when the registry
// mounted the blob (201); else loc is the session (202).
func (up *uploader) startUpload(ctx context.Context, d digest.Digest, fromRepo string) (mounted bool, loc *url.URL, err error) {
	u := up.uploadsURL()
	if d != "" {
		u += "?" + url.Values{"mount": {d.String()}, "from": {fromRepo}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return false, nil, err
	}
	resp, err := up.t.Do(req)
	if err != nil {
		return false, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
	switch {
	case resp.StatusCode == http.StatusCreated && d != "":
		return true, nil, nil
	case resp.StatusCode == http.StatusAccepted:
	default:
		return false, nil, transport.StatusError(http.MethodPost, resp, body, up.t.Host())
	}
	loc, err = sessionURL(resp)
	if err != nil {
		return false, nil, transport.InvalidDocument(up.t.Host(), "upload session: %v", err)
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

// cancelUpload DELETEs a session that will not be completed, so that no
// upload is left open on the registry. Best effort: the registry's own
// purge removes what this misses. distribution refuses (416) a DELETE
// whose Location names an older offset than the session's — a PATCH that
// broke moved it without saying — so a refusal asks the session's
// Location (GET) and tries once more.
func (up *uploader) cancelUpload(ctx context.Context, session *url.URL) {
	if session == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelUploadTimeout)
	defer cancel()
	status := up.deleteUpload(ctx, session)
	if status == 0 || status < 300 || status == http.StatusNotFound {
		return
	}
	if loc := up.currentLocation(ctx, session); loc != nil {
		up.deleteUpload(ctx, loc)
	}
}

// deleteUpload sends the DELETE: the answer's status, 0 without one.
func (up *uploader) deleteUpload(ctx context.Context, session *url.URL) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, session.String(), nil)
	if err != nil {
		return 0
	}
	resp, err := up.t.Do(req)
	if err != nil {
		up.log.WithError(err).Debug("cancelling an upload session failed")
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, transport.MaxErrorBody))
	resp.Body.Close()
	return resp.StatusCode
}
