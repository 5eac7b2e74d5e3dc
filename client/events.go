package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/url"

	"github.com/wharfproject/wharf/api/types"
)

// EventsOptions are the options of Events.
type EventsOptions struct {
	// Since and Until are what the docker CLI sends: Unix seconds (with an
	// optional fraction) or a timestamp the daemon parses.
	Since   string
	Until   string
	Filters types.Filters
}

// Events calls GET /events: a stream of JSON event records that ends at
// Until, or when ctx is cancelled.
func (c *Client) Events(ctx context.Context, opts EventsOptions) (io.ReadCloser, error) {
	q := url.Values{}
	if opts.Since != "" {
		q.Set("since", opts.Since)
	}
	if opts.Until != "" {
		q.Set("until", opts.Until)
	}
	if f := opts.Filters.Encode(); f != "" {
		q.Set("filters", f)
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/events", query: q})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// DecodeEvents yields the event records of an /events stream.
func DecodeEvents(r io.Reader) iter.Seq2[types.EventMessage, error] {
	return func(yield func(types.EventMessage, error) bool) {
		dec := json.NewDecoder(r)
		for {
			var m types.EventMessage
			err := dec.Decode(&m)
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(m, err) || err != nil {
				return
			}
		}
	}
}
