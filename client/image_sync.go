package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

// SyncOptions are the options of ImageSync (types.SyncOptions: sources,
// destination, filters).
type SyncOptions = types.SyncOptions

// SyncSource is one source of a sync.
type SyncSource = types.SyncSource

// SyncEvent is one line of the sync's stream.
type SyncEvent = types.SyncEvent

// SyncSummary ends the sync's stream.
type SyncSummary = types.SyncSummary

// SyncFailure is one failed image of a sync.
type SyncFailure = types.SyncFailure

// maxSyncLine caps one line of the sync's stream: an image's line is a
// few hundred bytes, the summary lists every failure with its message
// (a registry's capped text), so 64 MiB holds some 100,000 of them.
const maxSyncLine = 64 << 20

// ImageSync calls POST /wharf/images/sync (wharf's own): it mirrors
// opts.Sources to opts.Destination through the daemon and calls fn with
// each event as the daemon streams it; the summary is returned (fn sees it
// too). auth holds credentials keyed by registry: the daemon sends each
// set to its own registry only. A failed image is an event and a line of
// the summary, not an error; an error before the stream or an error line
// in it is.
func (c *Client) ImageSync(ctx context.Context, opts SyncOptions, auth map[string]registry.AuthConfig, fn func(SyncEvent) error) (*SyncSummary, error) {
	resp, err := c.postSync(ctx, "/wharf/images/sync", opts, auth)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readSyncStream(ctx, resp.Body, fn)
}

// postSync posts opts as the JSON body of a sync endpoint (the sync and
// the export), with auth in X-Registry-Config.
func (c *Client) postSync(ctx context.Context, path string, opts SyncOptions, auth map[string]registry.AuthConfig) (*http.Response, error) {
	body, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	h, err := registryConfigHeader(auth)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, request{method: http.MethodPost, path: path, header: h, body: bytes.NewReader(body), ctype: "application/json"})
}

// readSyncStream reads the sync's NDJSON stream (sync and import).
func readSyncStream(ctx context.Context, body io.Reader, fn func(SyncEvent) error) (*SyncSummary, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 4096), maxSyncLine)
	var sum *SyncSummary
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var line struct {
			SyncEvent
			Message string `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("decoding the sync's stream: %w", err)
		}
		if line.Status == "" && line.Summary == nil {
			if line.Message != "" {
				return sum, errors.New(line.Message)
			}
			return sum, fmt.Errorf("the sync's stream has a line without status: %.200s", sc.Text())
		}
		if line.Summary != nil {
			sum = line.Summary
		}
		if fn != nil {
			if err := fn(line.SyncEvent); err != nil {
				return sum, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return sum, ctx.Err()
		}
		return sum, fmt.Errorf("reading the sync's stream: %w", err)
	}
	if sum == nil {
		return nil, errors.New("the daemon ended the sync without a summary")
	}
	return sum, nil
}

// SyncSummaryTrailer is the trailer of the export's answer that carries
// its summary (base64url JSON).
const SyncSummaryTrailer = "Wharf-Sync-Summary"

// SyncExport is an export under way: Body is the OCI layout tar; once it
// is read to its end, Summary says what it holds.
type SyncExport struct {
	Body io.ReadCloser
	resp *http.Response
}

// Summary is the export's summary, from the answer's trailer: only after
// Body was read to io.EOF. Without the trailer the export broke off and
// the archive is not whole.
func (e *SyncExport) Summary() (*SyncSummary, error) {
	v := e.resp.Trailer.Get(SyncSummaryTrailer)
	if v == "" {
		return nil, errors.New("the daemon ended the export without its summary: the archive is not whole")
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("the export's summary: %w", err)
	}
	var sum SyncSummary
	if err := json.Unmarshal(b, &sum); err != nil {
		return nil, fmt.Errorf("the export's summary: %w", err)
	}
	return &sum, nil
}

// ImageSyncExport calls POST /wharf/images/sync/export: the images opts
// selects (its Destination empty) as one OCI image layout tar, streamed.
func (c *Client) ImageSyncExport(ctx context.Context, opts SyncOptions, auth map[string]registry.AuthConfig) (*SyncExport, error) {
	resp, err := c.postSync(ctx, "/wharf/images/sync/export", opts, auth)
	if err != nil {
		return nil, err
	}
	return &SyncExport{Body: resp.Body, resp: resp}, nil
}

// ImageSyncImport calls POST /wharf/images/sync/import: archive (an OCI
// image layout tar, as ImageSyncExport writes, skopeo or oras) is pushed
// to opts.Destination; events and summary as ImageSync.
func (c *Client) ImageSyncImport(ctx context.Context, archive io.Reader, opts SyncOptions, auth map[string]registry.AuthConfig, fn func(SyncEvent) error) (*SyncSummary, error) {
	o, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	h, err := registryConfigHeader(auth)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/wharf/images/sync/import", query: url.Values{"options": {string(o)}}, header: h, body: archive, ctype: "application/x-tar"})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readSyncStream(ctx, resp.Body, fn)
}
