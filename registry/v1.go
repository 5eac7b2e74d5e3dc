package registry

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
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry/hosts"
	"github.com/wharfproject/wharf/registry/transport"
)

// The v1 registry protocol, read-only, for remote inspect of registries that
// have no v2 API. oras-go speaks only v2, so this is ours. Every body is
// capped: the tag map at 4 MiB (about 50,000 tags), image JSON at 8 MiB
// (the same cap as a v2 config, which it plays the part of).

const maxV1TagsBody = 4 << 20

// v1ImageID is a v1 image id: 64 lower-case hex characters.
var v1ImageID = regexp.MustCompile(`^[a-f0-9]{64}$`)

type v1Session struct {
	r        *Repository
	base     string // scheme://host of the index
	endpoint string // scheme://host serving the repository
	token    string // X-Docker-Token
}

func (r *Repository) inspectV1(ctx context.Context, tag string, dgst digest.Digest, implicit bool) (*RemoteImage, error) {
	host := r.upstream.host
	if dgst != "" {
		return nil, fmt.Errorf("registry %s speaks only v1, which has no digests%.0w", host, errdefs.ErrNotFound)
	}
	s := &v1Session{r: r, base: r.upstream.baseURL()}
	if err := s.ping(ctx); err != nil {
		return nil, err
	}
	if err := s.images(ctx); err != nil {
		return nil, err
	}
	tags, err := s.tags(ctx)
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("tag %s not found in repository %s on %s%.0w", tag, r.path, host, errdefs.ErrNotFound)
	}
	if !v1ImageID.MatchString(id) {
		return nil, invalidDocument(host, "invalid v1 image id %q", id)
	}
	cfg, err := s.get(ctx, s.endpoint+"/v1/images/"+id+"/json", maxConfigSize)
	if err != nil {
		return nil, err
	}
	if !json.Valid(cfg) {
		return nil, invalidDocument(host, "v1 image %s JSON is not valid", id)
	}
	return &RemoteImage{
		TopLevel:    TopLevel{Registry: r.info.Index.Name, Name: r.info.Name, Tag: tag},
		Config:      ocispec.Descriptor{MediaType: imagespec.MediaTypeDockerConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))},
		ConfigBytes: cfg,
		V1:          true,
	}, nil
}

func (s *v1Session) do(ctx context.Context, u string, h http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	s.r.svc.setUserAgent(req)
	resp, err := s.r.svc.http.Do(req)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// get reads u (with the session token) capped at max bytes.
func (s *v1Session) get(ctx context.Context, u string, max int64) ([]byte, error) {
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
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, transport.StatusError(http.MethodGet, resp, body, host)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, invalidDocument(host, "v1 response from %s is larger than %d bytes", resp.Request.URL.Path, max)
	}
	return b, nil
}

func (s *v1Session) ping(ctx context.Context) error {
	resp, err := s.do(ctx, s.base+"/v1/_ping", nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("registry %s has neither a v2 nor a v1 API (v1 ping: %d)%.0w", s.r.upstream.host, resp.StatusCode, errdefs.ErrNotFound)
	}
	return nil
}

// images asks the index for a token and the endpoints that serve the
// repository. Basic credentials go only to the index host itself.
func (s *v1Session) images(ctx context.Context) error {
	h := http.Header{}
	h.Set("X-Docker-Token", "true")
	if ac := s.r.creds(); ac != nil && ac.Username != "" {
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(ac.Username+":"+ac.Password)))
	}
	resp, err := s.do(ctx, s.base+"/v1/repositories/"+s.r.path+"/images", h)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return transport.StatusError(http.MethodGet, resp, body, s.r.upstream.host)
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

func (s *v1Session) tags(ctx context.Context) (map[string]string, error) {
	b, err := s.get(ctx, s.endpoint+"/v1/repositories/"+s.r.path+"/tags", maxV1TagsBody)
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
			return nil, invalidDocument(s.r.upstream.host, "v1 tag list is not valid JSON")
		}
		for _, t := range list {
			tags[t.Name] = t.Layer
		}
	}
	return tags, nil
}
