package server

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

// Copy is wharf's own endpoint, not a Docker one:
//
//	POST /wharf/images/copy?src=NAME[:TAG|@DIGEST]&dst=NAME[:TAG][@DIGEST]
//	     [&platform=os/arch[/variant]][&all-platforms=1][&include-foreign=1]
//	     [&with-referrers=1]
//	X-Registry-Config: base64url(JSON {registry: AuthConfig, …})
//
// (also under /v1.NN/). It streams the progress messages of a push (the
// jsonmessage shape) and ends with an aux CopyResult; errors before the
// first message are plain error answers, later ones go in-stream.

// copyPath is the route of the copy.
const copyPath = "/wharf/images/copy"

// configHeader carries credentials per registry, as for a build. Never log it.
const configHeader = "X-Registry-Config"

func (s *Server) postImageCopy(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	src, dst := r.Form.Get("src"), r.Form.Get("dst")
	if src == "" || dst == "" {
		return invalidArg("copy needs src and dst")
	}
	for _, n := range []string{src, dst} {
		if _, err := reference.ParseAnyReference(n); err != nil {
			return invalidArg("invalid reference %q: %v", n, err)
		}
	}
	opts := types.CopyOptions{
		Source:         src,
		Destination:    dst,
		AllPlatforms:   boolValue(r, "all-platforms"),
		IncludeForeign: boolValue(r, "include-foreign"),
		WithReferrers:  boolValue(r, "with-referrers"),
		MetaHeaders:    metaHeaders(r),
	}
	if v := r.Form.Get("platform"); v != "" {
		p, err := parsePlatformString(v)
		if err != nil {
			return err
		}
		opts.Platform = p
	}
	auths, err := decodeRegistryConfig(r)
	if err != nil {
		return err
	}
	opts.Auth = auths
	out := newStreamWriter(w, "application/json")
	return out.finish(s.backend.CopyImage(r.Context(), opts, out))
}

// decodeRegistryConfig reads X-Registry-Config: base64url (or standard
// base64) JSON of registry → AuthConfig. Absent is anonymous; a header that
// does not decode is a 400 (unlike X-Registry-Auth, whose leniency dockerd
// fixed for compatibility: silently copying anonymously would hide it). The
// cap is X-Registry-Auth's.
func decodeRegistryConfig(r *http.Request) (map[string]registry.AuthConfig, error) {
	v := strings.Join(r.Header.Values(configHeader), "")
	if v == "" {
		return nil, nil
	}
	if len(v) > maxAuthHeader {
		return nil, invalidArg("%s header is %d bytes, larger than the %d allowed", configHeader, len(v), maxAuthHeader)
	}
	var b []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.URLEncoding, base64.StdEncoding, base64.RawURLEncoding, base64.RawStdEncoding} {
		if b, err = enc.DecodeString(v); err == nil {
			break
		}
	}
	if err != nil {
		return nil, invalidArg("%s header is not base64", configHeader)
	}
	var m map[string]registry.AuthConfig
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, invalidArg("%s header is not a JSON map of registry to credentials", configHeader)
	}
	return m, nil
}
