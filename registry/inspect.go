package registry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/imageref"
)

// inspectTimeout bounds one shared remote inspect: it runs detached from the
// first caller's context (others may be waiting on the same flight), so it
// needs its own limit. Each caller still returns when its own context ends.
const inspectTimeout = 2 * time.Minute

// Inspect answers a remote inspect.
//
// It is FindImage then Image(platform) (see resolve.go for the policy and the
// request budget). Concurrent identical requests — same name, platform,
// credential identity and meta headers — share one flight.
func (s *Service) Inspect(ctx context.Context, req InspectRequest) (*RemoteImage, error) {
	key := strings.Join([]string{
		req.Name,
		imagespec.FormatPlatform(imagespec.NormalizePlatform(req.Platform)),
		credentialsIdentity(req.Credentials),
		metaKey(req.Credentials.MetaHeaders),
		referrersKey(req.Referrers),
	}, "\x00")
	ch := s.flight.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), inspectTimeout)
		defer cancel()
		return s.inspect(fctx, req)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		img := *res.Val.(*RemoteImage) // callers share byte slices: read-only
		return &img, nil
	}
}

func metaKey(h http.Header) string {
	if len(h) == 0 {
		return ""
	}
	var parts []string
	for k, v := range h {
		parts = append(parts, k+"="+strings.Join(v, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, "\x01")
}

func (s *Service) inspect(ctx context.Context, req InspectRequest) (*RemoteImage, error) {
	ref, err := imageref.Parse(req.Name)
	if err != nil {
		return nil, err
	}
	res, err := s.FindImage(ctx, ref, req.Credentials)
	if err != nil {
		return nil, err
	}
	img, err := res.image(ctx, req.Platform, req.OnManifest)
	if err != nil {
		return nil, err
	}
	if req.Referrers != nil {
		if img.Referrers, err = res.Referrers(ctx, img, *req.Referrers); err != nil {
			return nil, err
		}
	}
	img.RateLimit = res.repo.rateLimit()
	s.log.WithField("registry", img.Registry).Debugf("Inspecting image %s", describeImage(img))
	return img, nil
}

// referrersKey tells apart, in the inspect flight key, a request without
// referrers, with all, and with one artifact type.
func referrersKey(o *ReferrersOptions) string {
	if o == nil {
		return ""
	}
	return "referrers=" + o.ArtifactType
}

// notFoundError words a missing image like dockerd.
func notFoundError(name reference.Named, tag string, dgst digest.Digest, err error) error {
	ref := reference.FamiliarName(name)
	if dgst != "" {
		ref += "@" + dgst.String()
	} else {
		ref += ":" + tag
	}
	return fmt.Errorf("manifest for %s not found: %w", ref, err)
}

// hasNoV2 reports whether the upstream endpoint answers GET /v2/ with 404:
// the only case in which the v1 protocol is tried.
func (r *Repository) hasNoV2(ctx context.Context) bool {
	if r.upstream.rooted {
		return false // a hosts.toml server under a path is a v2 API by its configuration
	}
	if _, ok := r.svc.http.RememberedRealm(r.upstream.host); ok {
		return false // its /v2/ challenged us: it has the API
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.upstream.baseURL()+"/v2/", nil)
	if err != nil {
		return false
	}
	r.svc.setUserAgent(req)
	resp, err := r.svc.http.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		r.svc.http.LearnChallenge(r.upstream.host, resp.Header.Values("Www-Authenticate"))
	}
	return resp.StatusCode == http.StatusNotFound
}

// describeImage is NAME[:TAG][@DIGEST] of what answered, for the debug log.
func describeImage(img *RemoteImage) string {
	var name string
	if img.Name != nil {
		name = reference.FamiliarName(img.Name)
	}
	return imagespec.FormatReference(name, img.Tag, img.Descriptor.Digest.String())
}
