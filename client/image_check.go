package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

// RemoteCheckResult is one line of the update check.
type RemoteCheckResult = types.RemoteCheckResult

// CheckRemoteOptions are the options of ImageCheckRemote.
type CheckRemoteOptions struct {
	// Names narrow the check to the local tags they match; empty = all.
	Names []string
	// MaxAge lets an answer the registry gave within it stand (0: always ask).
	MaxAge time.Duration
	// Auth holds credentials keyed by registry (host[:port], or Docker
	// Hub's https://index.docker.io/v1/), sent as X-Registry-Config; the
	// daemon sends each set only to its registry.
	Auth map[string]registry.AuthConfig
	// Newer asks for the newer versions of each version tag (newer=1):
	// RemoteCheckResult.NewerPatch, NewerMinor, NewerMajor, VersionTag,
	// NewerError and NewerCached.
	Newer bool
	// Base asks for the base check (base=1) of images that name their
	// base: RemoteCheckResult.BaseStatus, BaseName, BaseDigest,
	// BaseCurrentDigest, BaseCurrentPlatformDigest, BasePlatform and
	// BaseError, BaseSource.
	Base bool
	// BaseName (base-name=REF) is the base of the images that name none,
	// compared by layer prefix (implies Base).
	BaseName string
	// Diff asks for the summary of what changed (diff=1) of each outdated
	// tag, or one with a newer version: RemoteCheckResult.Diff.
	Diff bool
}

// maxCheckLine caps one line of the check's stream (1 MiB): a result is a
// few hundred bytes, RemoteError quotes at most a registry's capped
// message, and a summary (diff=1) names at most 4,096 packages per list
// at under 100 bytes each (graph/updates, maxSummaryPackages).
const maxCheckLine = 1 << 20

// ImageCheckRemote calls POST /wharf/images/check-remote (wharf's own) and
// calls fn with each result as the daemon streams it. An error before the
// stream (no such image, bad max-age) or an error line in it ends the call
// with that error; so does fn's error.
func (c *Client) ImageCheckRemote(ctx context.Context, opts CheckRemoteOptions, fn func(RemoteCheckResult) error) error {
	q := url.Values{}
	for _, n := range opts.Names {
		q.Add("name", n)
	}
	if opts.MaxAge > 0 {
		q.Set("max-age", opts.MaxAge.String())
	}
	if opts.Newer {
		q.Set("newer", "1")
	}
	if opts.Base {
		q.Set("base", "1")
	}
	if opts.BaseName != "" {
		q.Set("base-name", opts.BaseName)
	}
	if opts.Diff {
		q.Set("diff", "1")
	}
	h, err := registryConfigHeader(opts.Auth)
	if err != nil {
		return err
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/wharf/images/check-remote", query: q, header: h})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), maxCheckLine)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var line struct {
			RemoteCheckResult
			Message string `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("decoding the check's stream: %w", err)
		}
		if line.RemoteStatus == "" {
			if line.Message != "" {
				return errors.New(line.Message)
			}
			return fmt.Errorf("the check's stream has a line without RemoteStatus: %.200s", sc.Text())
		}
		if err := fn(line.RemoteCheckResult); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("reading the check's stream: %w", err)
	}
	return nil
}
