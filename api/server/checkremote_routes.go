package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

// The update check is wharf's own endpoint, not a Docker one:
//
//	POST /wharf/images/check-remote[?name=NAME…][&max-age=DURATION][&newer=1][&base=1][&diff=1]   (also under /v1.NN/)
//
// It checks every tagged local image — or the tags the name values match,
// as the reference filter of GET /images/json matches (a name matching none
// is a 404 before anything is streamed) — against its registry, and
// answers 200 with newline-delimited JSON (application/x-ndjson): one
// RemoteCheckResult per tag, each line flushed as the registry answers, in
// the order they arrive. One registry failing makes its images' lines
// RemoteStatus "error"; it never ends the stream. An error after the
// stream began (the daemon shutting down) is a last line {"message": …}.
//
// max-age is a Go duration ("30s", "5m"; default 0 = always ask): an
// answer the registry gave for the same repository and credential identity
// within it stands, with no request.
//
// newer=1 adds, for each version tag, the newer versions of its shape per
// level (NewerPatch, NewerMinor, NewerMajor), from one tag
// listing per repository (none within max-age of the last). base=1 adds
// BaseStatus and its digests for each image whose annotations or labels
// name its base; base-name=REF (implies base=1) names the base of the
// images that name none, compared by layer prefix. diff=1 adds Diff, the
// summary of what changed, to each outdated tag (else, with newer=1, one
// with a newer version): one diff each, two at a time, built only on this
// request. Each line keeps its shape and only gains fields.
//
// Credentials: X-Registry-Config (base64url JSON of {server address:
// AuthConfig}, as docker build sends them) gives one credential per
// registry; X-Registry-Auth adds one more when it names its ServerAddress
// (without one it is ignored: the check spans registries, and a credential
// is sent only to the registry it names). Both are decoded leniently, as
// for pull: undecodable is anonymous.

const (
	checkRemotePath = "/wharf/images/check-remote"
	// ndjson is the media type of wharf's own streams (the check's).
	ndjson = "application/x-ndjson"
)

func (s *Server) postImagesCheckRemote(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	opts := types.RemoteCheckOptions{Names: r.Form["name"], MetaHeaders: metaHeaders(r)}
	if v := r.Form.Get("max-age"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return invalidArg("invalid max-age %q: a duration such as 30s or 5m, not negative", v)
		}
		opts.MaxAge = d
	}
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"newer", &opts.Newer}, {"base", &opts.Base}, {"diff", &opts.Diff}} {
		if v := r.Form.Get(f.name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return invalidArg("invalid %s %q: 1 or 0", f.name, v)
			}
			*f.dst = b
		}
	}
	if v := r.Form.Get("base-name"); v != "" {
		if _, err := reference.ParseNormalizedNamed(v); err != nil {
			return invalidArg("invalid base-name %q: %v", v, err)
		}
		opts.Base, opts.BaseName = true, v
	}
	auths, err := decodeAuthConfigs(r)
	if err != nil {
		return err
	}
	opts.Auth = auths

	sw := newNDJSONWriter(w)
	err = s.backend.CheckRemote(r.Context(), opts, func(res types.RemoteCheckResult) error {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		return sw.writeLine(b)
	})
	if err == nil || !sw.Started() {
		return sw.finish(err) // an empty stream, or an ordinary error answer
	}
	// After the first line: a last {"message": …} line (not dockerd's
	// errorDetail: this stream is wharf's own).
	b, _ := json.Marshal(errorResponse{Message: err.Error()})
	_ = sw.writeLine(b) // nothing more when the client has gone
	return nil
}

// decodeAuthConfigs is X-Registry-Config (decodeRegistryConfig: one
// decoder for every endpoint that takes it) plus an X-Registry-Auth that
// names its registry, for a client that sends only that. One without a
// serveraddress is ignored: the check spans registries, and a credential
// must never be guessed onto one.
func decodeAuthConfigs(r *http.Request) (map[string]registry.AuthConfig, error) {
	m, err := decodeRegistryConfig(r)
	if err != nil {
		return nil, err
	}
	a, err := decodeAuth(r)
	if err != nil {
		return nil, err
	}
	if a != nil && a.ServerAddress != "" {
		if _, ok := m[a.ServerAddress]; !ok {
			if m == nil {
				m = map[string]registry.AuthConfig{}
			}
			m[a.ServerAddress] = *a
		}
	}
	return m, nil
}
