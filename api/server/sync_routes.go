package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/wharfproject/wharf/api/types"
)

// Sync is wharf's own endpoint, not a Docker one:
//
//	POST /wharf/images/sync   (also under /v1.NN/)
//	Content-Type: application/json, body types.SyncOptions
//	X-Registry-Config: base64url(JSON {registry: AuthConfig, …})
//
// It mirrors repositories registry to registry (graph/distribution
// sync.go) and answers 200 with newline-delimited JSON: one SyncEvent per
// image (and per pause), then a last one with its Summary. A failed image
// is a line with Status "failed" and a failure in the summary, never the
// end of the stream; an error before the first line (arguments, a source
// that cannot be listed) is an ordinary error answer, one after it a last
// line {"message": …}. Credentials come from the header only: the body's
// fields for them are ignored (they have none).

const syncPath = "/wharf/images/sync"

// maxSyncBody caps the options: 1,000 sources of a few hundred bytes
// (maxSyncSources) fit in 1 MiB.
const maxSyncBody = 1 << 20

func (s *Server) postImagesSync(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	var opts types.SyncOptions
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSyncBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&opts); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return invalidArg("sync options are larger than %d bytes", maxSyncBody)
		}
		if errors.Is(err, io.EOF) {
			return invalidArg("sync needs its options as a JSON body")
		}
		return invalidArg("invalid sync options: %v", err)
	}
	auths, err := decodeRegistryConfig(r)
	if err != nil {
		return err
	}
	opts.Auth, opts.MetaHeaders = auths, metaHeaders(r)

	sw := newNDJSONWriter(w)
	err = s.backend.SyncImages(r.Context(), opts, func(ev types.SyncEvent) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		return sw.writeLine(b)
	})
	if err == nil || !sw.Started() {
		return sw.finish(err)
	}
	b, _ := json.Marshal(errorResponse{Message: err.Error()})
	_ = sw.writeLine(b)
	return nil
}
