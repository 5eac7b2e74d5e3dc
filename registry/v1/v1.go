// Package v1 is the v1 registry protocol, read-only, for the remote
// inspect of registries that have no v2 API: ping, the index's token and
// endpoints, the tag map, the image JSON. oras-go speaks only v2, so this
// is wharf's own. Every body is capped: the tag map at 4 MiB (about 50,000
// tags), an image's JSON at the caller's cap (a v2 config's, whose part it
// plays).
//
// It speaks to the registry through Target, which package registry
// implements over a repository's upstream; below it are registry/hosts
// (the host grammar) and registry/transport (the error classes), never
// package registry.
package v1

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/wharfproject/wharf/registry/hosts"
	"github.com/wharfproject/wharf/registry/transport"
)

const maxV1TagsBody = 4 << 20

// v1ImageID is a v1 image id: 64 lower-case hex characters.
var v1ImageID = regexp.MustCompile(`^[a-f0-9]{64}$`)

// Target is the repository on its upstream, as the v1 protocol reaches it.
type Target interface {
	// Host is the upstream's host, BaseURL its scheme://host: errors
	// name the one, requests start at the other.
	Host() string
	BaseURL() string
	// Path is the repository's path on the registry.
	Path() string
	// Basic is the credentials for the index (empty user: anonymous).
	Basic() (user, password string)
	// Do sends req through the HTTP stack, with the user agent but
	// without the v2 authorizer (v1 has its own token).
	Do(req *http.Request) (*http.Response, error)
}

// Image is what a v1 registry said of a tag.
type Image struct {
	Tag    string // the tag: the first by name when an implicit latest was missing
	ID     string // the v1 image id
	Config []byte // the image JSON, valid JSON
}

type session struct {
	t        Target
	base     string // scheme://host of the index
	endpoint string // scheme://host serving the repository
	token    string // X-Docker-Token
}

// Inspect reads tag's image JSON, capped at maxConfig bytes. implicit says
// the tag was not typed (latest by default): a repository without it
// answers its first tag by name instead. A registry without a v1 API, and
// a missing tag, are errdefs.ErrNotFound.
func Inspect(ctx context.Context, t Target, tag string, implicit bool, maxConfig int64) (Image, error) {
	host := t.Host()
	s := &session{t: t, base: t.BaseURL()}
	if err := s.ping(ctx); err != nil {
		return Image{}, err
	}
	if err := s.images(ctx); err != nil {
		return Image{}, err
	}
	tags, err := s.tags(ctx)
	if err != nil {
		return Image{}, err
	}
	id, ok := tags[tag]
	if !ok && implicit && len(tags) > 0 {
		names := make([]string, 0, len(tags))
		for t := range tags {
			names = append(names, t)
		}
		sort.Strings(names)
		tag, id, ok = names[0], tags[names[0]], true
	}
	if !ok {
		return Image{}, fmt.Errorf("tag %s not found in repository %s on %s%.0w", tag, t.Path(), host, errdefs.ErrNotFound)
	}
	if !v1ImageID.MatchString(id) {
		return Image{}, transport.InvalidDocument(host, "invalid v1 image id %q", id)
	}
	cfg, err := s.get(ctx, s.endpoint+"/v1/images/"+id+"/json", maxConfig)
	if err != nil {
		return Image{}, err
	}
	if !json.Valid(cfg) {
		return Image{}, transport.InvalidDocument(host, "v1 image %s JSON is not valid", id)
	}
	return Image{Tag: tag, ID: id, Config: cfg}, nil
}

func (s *session) do(ctx context.Context, u string, h http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := s.t.Do(req)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// get reads u (with the session token) capped at max bytes.
func (s *session) get(ctx context.Context, u string, max int64) ([]byte, error) {
	h := http.Header{}
	if s.token != "" {
		h.Set("Authorization", "Token "+s.token)
	}
	resp, err := s.do(ctx, u, h)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	host := resp.Request.URL.Host
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
		return nil, transport.StatusError(http.MethodGet, resp, body, host)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, transport.InvalidDocument(host, "v1 response from %s is larger than %d bytes", resp.Request.URL.Path, max)
	}
	return b, nil
}

func (s *session) ping(ctx context.Context) error {
	resp, err := s.do(ctx, s.base+"/v1/_ping", nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, transport.MaxErrorBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("registry %s has neither a v2 nor a v1 API (v1 ping: %d)%.0w", s.t.Host(), resp.StatusCode, errdefs.ErrNotFound)
	}
	return nil
}

// images asks the index for a token and the endpoints that serve the
// repository. Basic credentials go only to the index host itself.
func (s *session) images(ctx context.Context) error {
	h := http.Header{}
	h.Set("X-Docker-Token", "true")
	if user, password := s.t.Basic(); user != "" {
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
	}
	resp, err := s.do(ctx, s.base+"/v1/repositories/"+s.t.Path()+"/images", h)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return transport.StatusError(http.MethodGet, resp, body, s.t.Host())
	}
	s.token = resp.Header.Get("X-Docker-Token")
	s.endpoint = s.base
	if eps := resp.Header.Get("X-Docker-Endpoints"); eps != "" {
		first := strings.TrimSpace(strings.Split(eps, ",")[0])
		base, _ := url.Parse(s.base)
		// The endpoint inherits the index's scheme: an index reached over
		// https never sends us to plain http.
		if _, err := hosts.ValidateHost(first); err == nil {
			s.endpoint = base.Scheme + "://" + first
		}
	}
	return nil
}

func (s *session) tags(ctx context.Context) (map[string]string, error) {
	b, err := s.get(ctx, s.endpoint+"/v1/repositories/"+s.t.Path()+"/tags", maxV1TagsBody)
	if err != nil {
		return nil, err
	}
	tags := map[string]string{}
	if err := json.Unmarshal(b, &tags); err != nil {
		// Very old registries answer a list of {"layer","name"} objects.
		var list []struct {
			Layer string `json:"layer"`
			Name  string `json:"name"`
		}
		if json.Unmarshal(b, &list) != nil {
			return nil, transport.InvalidDocument(s.t.Host(), "v1 tag list is not valid JSON")
		}
		for _, t := range list {
			tags[t.Name] = t.Layer
		}
	}
	return tags, nil
}
