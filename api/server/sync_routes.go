package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

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
	opts, err := decodeSyncOptions(w, r)
	if err != nil {
		return err
	}
	auths, err := decodeRegistryConfig(r)
	if err != nil {
		return err
	}
	opts.Auth, opts.MetaHeaders = auths, metaHeaders(r)

	return streamSyncEvents(w, func(emit func(types.SyncEvent) error) error {
		return s.backend.SyncImages(r.Context(), opts, emit)
	})
}

// streamSyncEvents answers a sync's events as NDJSON while run emits them.
// An error before the first line is the usual error answer; one after it
// is the last line ({"message": …}), as the other streams end.
func streamSyncEvents(w http.ResponseWriter, run func(emit func(types.SyncEvent) error) error) error {
	sw := newNDJSONWriter(w)
	err := run(func(ev types.SyncEvent) error {
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

// The air gap, wharf's own endpoints too:
//
//	POST /wharf/images/sync/export   body types.SyncOptions (no destination)
//
// answers 200 with an OCI image layout tar (application/x-tar) of every
// image selected, streamed as it is read from the sources, and the
// summary in the trailer Wharf-Sync-Summary (base64url JSON of
// types.SyncSummary). An error before the first byte is an ordinary error
// answer; one after it cuts the body (an unexpected EOF: no index.json,
// no trailer), and a client treats a missing trailer as a failed export.
//
//	POST /wharf/images/sync/import?options=JSON   body: such a tar
//
// reads the tar (under the data-root, ingest/) and pushes its images to
// options' destination; the answer is the sync stream (NDJSON events,
// summary last).

const (
	syncExportPath = "/wharf/images/sync/export"
	syncImportPath = "/wharf/images/sync/import"
	// SyncSummaryTrailer carries the export's summary.
	syncSummaryTrailer = "Wharf-Sync-Summary"
)

// decodeSyncOptions reads the options of a sync from the body (sync,
// export).
func decodeSyncOptions(w http.ResponseWriter, r *http.Request) (types.SyncOptions, error) {
	var opts types.SyncOptions
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSyncBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&opts); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return opts, invalidArg("sync options are larger than %d bytes", maxSyncBody)
		}
		if errors.Is(err, io.EOF) {
			return opts, invalidArg("sync needs its options as a JSON body")
		}
		return opts, invalidArg("invalid sync options: %v", err)
	}
	return opts, nil
}

// lazyTar sends the 200 and its headers with the first byte, so that an
// error before it is still an ordinary error answer.
type lazyTar struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyTar) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.w.Header().Set("Content-Type", "application/x-tar")
		l.w.Header().Set("Trailer", syncSummaryTrailer)
		l.w.WriteHeader(http.StatusOK)
	}
	return l.w.Write(p)
}

func (s *Server) postImagesSyncExport(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	opts, err := decodeSyncOptions(w, r)
	if err != nil {
		return err
	}
	if opts.Destination != "" {
		return invalidArg("an export has no destination: the archive is the answer")
	}
	auths, err := decodeRegistryConfig(r)
	if err != nil {
		return err
	}
	opts.Auth, opts.MetaHeaders = auths, metaHeaders(r)
	lt := &lazyTar{w: w}
	sum, err := s.backend.SyncExport(r.Context(), opts, lt)
	if err != nil {
		if !lt.started {
			return err
		}
		// The body is cut (no last chunk, no index.json, no trailer):
		// the client sees an unexpected EOF, never a short archive that
		// looks whole.
		s.log.WithError(err).Warn("sync export broke off after the response started")
		panic(http.ErrAbortHandler)
	}
	b, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	if !lt.started {
		_, _ = lt.Write(nil)
	}
	w.Header().Set(syncSummaryTrailer, base64.RawURLEncoding.EncodeToString(b))
	return nil
}

func (s *Server) postImagesSyncImport(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	var opts types.SyncOptions
	v := r.Form.Get("options")
	if len(v) > maxSyncBody {
		return invalidArg("sync options are larger than %d bytes", maxSyncBody)
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&opts); err != nil {
		return invalidArg("invalid sync options: %v", err)
	}
	auths, err := decodeRegistryConfig(r)
	if err != nil {
		return err
	}
	opts.Auth, opts.MetaHeaders = auths, metaHeaders(r)
	return streamSyncEvents(w, func(emit func(types.SyncEvent) error) error {
		return s.backend.SyncImport(r.Context(), opts, r.Body, emit)
	})
}
