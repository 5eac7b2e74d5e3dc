package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/imageref"
)

// postImagesCreate is a pull (fromImage) or an import (fromSrc).
func (s *Server) postImagesCreate(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	var platform *ocispec.Platform
	if p := r.Form.Get("platform"); p != "" && versionAtLeast(apiVersionFrom(r.Context()), "1.32") {
		plat, err := parsePlatformString(p)
		if err != nil {
			return err
		}
		platform = plat
	}
	out := newStreamWriter(w, "application/json")
	if img := r.Form.Get("fromImage"); img != "" {
		return out.finish(s.pull(r, img, platform, out))
	}
	return out.finish(s.importImage(r, platform, out))
}

func (s *Server) pull(r *http.Request, img string, platform *ocispec.Platform, out types.ProgressWriter) error {
	ref, err := imageref.ForPull(img, r.Form.Get("tag"))
	if err != nil {
		return err
	}
	auth, regs, err := requestCredentials(r, decodeAuth)
	if err != nil {
		return err
	}
	return s.backend.PullImage(r.Context(), types.PullOptions{
		Ref:         ref,
		Platform:    platform,
		Auth:        auth,
		Registries:  regs,
		MetaHeaders: metaHeaders(r),
	}, out)
}

func (s *Server) importImage(r *http.Request, platform *ocispec.Platform, out types.ProgressWriter) error {
	src := r.Form.Get("fromSrc")
	if src != "-" {
		if src == "" {
			return invalidArg("fromImage or fromSrc must be set")
		}
		return fmt.Errorf("importing from a URL is not supported; send the tar as the request body with fromSrc=-%.0w", errdefs.ErrNotImplemented)
	}
	repo, tag := r.Form.Get("repo"), r.Form.Get("tag")
	if repo != "" {
		ref, err := repoTagReference(repo, tag)
		if err != nil {
			return err
		}
		repo, tag = reference.FamiliarName(ref), ref.Tag()
	}
	msg := r.Form.Get("message")
	if msg == "" {
		msg = "Imported from " + src
	}
	return s.backend.ImportImage(r.Context(), r.Body, types.ImportOptions{
		Repo:     repo,
		Tag:      tag,
		Changes:  r.Form["changes"],
		Message:  msg,
		Platform: platform,
	}, out)
}

func (s *Server) postImagePush(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	auth, regs, err := requestCredentials(r, pushAuth)
	if err != nil {
		return err
	}
	name := vars["name"]
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return invalidArg("%v", err)
	}
	p, err := platformParam(r, "1.46")
	if err != nil {
		return err
	}
	tag := r.Form.Get("tag")
	// A platform with a tag is checked here, before the stream starts; with
	// every tag (push -a --platform), the backend checks each tag's.
	if p != nil && tag != "" {
		if err := s.backend.CheckPlatform(r.Context(), name+":"+tag, *p); err != nil {
			return err
		}
	}
	out := newStreamWriter(w, "application/json")
	return out.finish(s.backend.PushImage(r.Context(), types.PushOptions{
		Repo:        reference.TrimNamed(named), // a tag in the name is ignored
		Tag:         tag,
		Platform:    p,
		Auth:        auth,
		Registries:  regs,
		MetaHeaders: metaHeaders(r),
	}, out))
}

// pushAuth follows dockerd: the X-Registry-Auth header when present (an
// undecodable one is anonymous); without it, the legacy JSON AuthConfig body,
// whose absence is a 400 "Bad parameters and missing X-Registry-Auth: EOF".
// The Go SDK sends "{}" as the body for that reason.
func pushAuth(r *http.Request) (*registry.AuthConfig, error) {
	if _, ok := r.Header[authHeader]; ok {
		return decodeAuth(r)
	}
	var a registry.AuthConfig
	if err := json.NewDecoder(io.LimitReader(r.Body, maxJSONBody)).Decode(&a); err != nil {
		return nil, invalidArg("Bad parameters and missing X-Registry-Auth: %v", err)
	}
	if a == (registry.AuthConfig{}) {
		return nil, nil
	}
	return &a, nil
}
