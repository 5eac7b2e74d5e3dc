package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

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
	body, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	h, err := registryConfigHeader(auth)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/wharf/images/sync", header: h, body: bytes.NewReader(body), ctype: "application/json"})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
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
