package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

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

const (
	maxLocationsPerBlob = 8
	maxBlobLocations    = 1 << 16
)
