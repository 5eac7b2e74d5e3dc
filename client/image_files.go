package client

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

const (
	// maxFilesLine caps one line of the files stream (64 KiB): an entry
	// holds two paths of at most 4,096 bytes each (PATH_MAX), JSON-escaped
	// at most six bytes a byte, and a few short fields.
	maxFilesLine = 64 << 10
	// maxPathStatHeader caps X-Docker-Container-Path-Stat (16 KiB): the
	// base64 of a name and a link target of at most 4,096 bytes each.
	maxPathStatHeader = 16 << 10
	// PathStatHeader carries the stat of an archive's path: base64
	// (standard encoding) of container.PathStat's JSON, as dockerd's
	// archive endpoints send it.
	PathStatHeader = "X-Docker-Container-Path-Stat"
)

// FilesOptions are the options of ImageFiles, ImageStat and ImageArchive.
type FilesOptions struct {
	// Path inside the image; "" is the root for ImageFiles.
	Path string
	// Recursive lists everything under Path (ImageFiles only).
	Recursive bool
	// Layers lists each layer's own entries (ImageFiles only).
	Layers bool
	// Remote reads the image from its registry without pulling it.
	Remote bool
	// Platform selects the platform manifest.
	Platform *ocispec.Platform
	// Auth is sent as X-Registry-Auth; nil sends none.
	Auth *registry.AuthConfig
	// Registries: as InspectOptions.Registries.
	Registries map[string]registry.AuthConfig
}

func (o FilesOptions) request(method, name, what string, files bool) (request, error) {
	q := url.Values{}
	q.Set("path", o.Path)
	if o.Remote {
		q.Set("remote", "1")
	}
	if files && o.Recursive {
		q.Set("recursive", "1")
	}
	if files && o.Layers {
		q.Set("layers", "1")
	}
	if err := setPlatformJSON(q, o.Platform); err != nil {
		return request{}, err
	}
	h, err := credentialHeaders(o.Auth, o.Registries, false)
	if err != nil {
		return request{}, err
	}
	return request{method: method, path: "/wharf/images/" + name + "/" + what, query: q, header: h}, nil
}

// ImageFiles calls GET /wharf/images/{name}/files (wharf's own endpoint)
// and hands each entry to fn, in the daemon's order; raw is the entry's
// line as the daemon sent it (for --format json), valid only during the
// call. A stream the daemon cut
// short is an error, never a shorter listing.
func (c *Client) ImageFiles(ctx context.Context, name string, opts FilesOptions, fn func(e types.FileEntry, raw []byte) error) error {
	r, err := opts.request(http.MethodGet, name, "files", true)
	if err != nil {
		return err
	}
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxFilesLine)
	var dec filesDecoder
	var e types.FileEntry // one for the stream, not one allocated a line
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := dec.decode(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("decoding the files stream: %w", err)
		}
		if err := fn(e, sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("the daemon ended the listing of %s early (see its log): %w", name, err)
		}
		return fmt.Errorf("reading the files stream: %w", err)
	}
	return nil
}

// ImageStat calls HEAD /wharf/images/{name}/archive: the path's stat, as
// dockerd's HEAD /containers/{id}/archive gives it (LinkTarget is a
// symlink's target resolved inside the image).
func (c *Client) ImageStat(ctx context.Context, name string, opts FilesOptions) (container.PathStat, error) {
	r, err := opts.request(http.MethodHead, name, "archive", false)
	if err != nil {
		return container.PathStat{}, err
	}
	resp, err := c.do(ctx, r)
	if err != nil {
		return container.PathStat{}, headError(err, name, opts.Path)
	}
	resp.Body.Close()
	return decodePathStat(resp.Header)
}

// ImageArchive calls GET /wharf/images/{name}/archive: a tar of the path
// and its stat. The caller closes the reader; a tar the daemon cut short
// fails with io.ErrUnexpectedEOF.
func (c *Client) ImageArchive(ctx context.Context, name string, opts FilesOptions) (io.ReadCloser, container.PathStat, error) {
	r, err := opts.request(http.MethodGet, name, "archive", false)
	if err != nil {
		return nil, container.PathStat{}, err
	}
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, container.PathStat{}, err
	}
	st, err := decodePathStat(resp.Header)
	if err != nil {
		resp.Body.Close()
		return nil, st, err
	}
	return resp.Body, st, nil
}

// decodePathStat reads X-Docker-Container-Path-Stat.
func decodePathStat(h http.Header) (container.PathStat, error) {
	var st container.PathStat
	v := h.Get(PathStatHeader)
	if v == "" {
		return st, fmt.Errorf("the daemon's answer has no %s header", PathStatHeader)
	}
	if len(v) > maxPathStatHeader {
		return st, fmt.Errorf("%s header is %d bytes, over the %d allowed", PathStatHeader, len(v), maxPathStatHeader)
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return st, fmt.Errorf("decoding %s: %w", PathStatHeader, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("decoding %s: %w", PathStatHeader, err)
	}
	return st, nil
}

// headError gives a HEAD's error answer (a status without a body) a
// message, as the docker CLI does for a container's path.
func headError(err error, name, path string) error {
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusNotFound || e.Message != fmt.Sprintf("%d %s", e.StatusCode, http.StatusText(e.StatusCode)) {
		return err
	}
	return &Error{StatusCode: e.StatusCode, Message: fmt.Sprintf("Could not find the file %s in image %s (or no such image)", path, name)}
}
