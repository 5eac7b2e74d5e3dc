package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// inspectOptions reads manifests (API >= 1.48) and platform (>= 1.49), which
// dockerd refuses together.
func inspectOptions(r *http.Request) (types.InspectOptions, error) {
	version := apiVersionFrom(r.Context())
	var opts types.InspectOptions
	if r.Form.Get("manifests") != "" && versionAtLeast(version, "1.48") {
		opts.Manifests = boolValue(r, "manifests")
	}
	if p := r.Form.Get("platform"); p != "" && versionAtLeast(version, "1.49") {
		plat, err := decodePlatformJSON(p)
		if err != nil {
			return opts, err
		}
		opts.Platform = plat
	}
	if opts.Manifests && opts.Platform != nil {
		return opts, invalidArg("conflicting options: manifests and platform options cannot both be set")
	}
	return opts, nil
}

func (s *Server) getImageByName(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	opts, err := inspectOptions(r)
	if err != nil {
		return err
	}
	name := vars["name"]
	version := apiVersionFrom(r.Context())
	if boolValue(r, "remote") {
		return s.inspectRemote(w, r, name, opts)
	}
	img, err := s.backend.ImageInspect(r.Context(), name, opts)
	if err != nil {
		return err
	}
	b, err := gateInspect(img, img.Legacy, version)
	if err != nil {
		return err
	}
	writeRawJSON(w, b)
	return nil
}

// inspectRemote answers GET /images/{name}/json?remote=1: the registry's view
// of the image, gated by version exactly like a local inspect; with raw=1 the
// manifest bytes as served.
func (s *Server) inspectRemote(w http.ResponseWriter, r *http.Request, name string, opts types.InspectOptions) error {
	auth, regs, err := requestCredentials(r, decodeAuth)
	if err != nil {
		return err
	}
	ropts := types.RemoteInspectOptions{
		InspectOptions: opts,
		Auth:           auth,
		Registries:     regs,
		MetaHeaders:    metaHeaders(r),
		Raw:            boolValue(r, "raw"),
		Referrers:      referrersQuery(r),
		Verify:         boolValue(r, "verify"),
	}
	if ropts.Raw {
		body, desc, err := s.backend.RemoteManifest(r.Context(), name, ropts)
		if err != nil {
			return err
		}
		mediaType := desc.MediaType
		if mediaType == "" {
			mediaType = "application/octet-stream"
		}
		w.Header().Set("Content-Type", mediaType)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		// The registry's digest, not a hash of the body: they differ for
		// signed schema1, and for a sha512 reference.
		if desc.Digest != "" {
			w.Header().Set("Docker-Content-Digest", desc.Digest.String())
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return nil
	}
	img, err := s.backend.LookupRemote(r.Context(), name, ropts)
	if err != nil {
		return err
	}
	b, err := gateInspect(img, img.Legacy, apiVersionFrom(r.Context()))
	if err != nil {
		return err
	}
	writeRawJSON(w, b)
	return nil
}

func writeRawJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

func (s *Server) getImageHistory(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	var platform *ocispec.Platform
	if p := r.Form.Get("platform"); p != "" && versionAtLeast(apiVersionFrom(r.Context()), "1.48") {
		plat, err := decodePlatformJSON(p)
		if err != nil {
			return err
		}
		platform = plat
	}
	h, err := s.backend.ImageHistory(r.Context(), vars["name"], platform)
	if err != nil {
		return err
	}
	if h == nil {
		h = []image.HistoryResponseItem{}
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}

// repoTagReference is dockerd's httputils.RepoTagReference: repo may carry
// the tag itself; tag wins; the default is latest.
func repoTagReference(repo, tag string) (reference.NamedTagged, error) {
	ref, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return nil, invalidArg("%v", err)
	}
	if _, ok := ref.(reference.Digested); ok {
		return nil, invalidArg("cannot import digest reference")
	}
	if tag != "" {
		t, err := reference.WithTag(reference.TrimNamed(ref), tag)
		if err != nil {
			return nil, invalidArg("%v", err)
		}
		return t, nil
	}
	t, ok := reference.TagNameOnly(ref).(reference.NamedTagged)
	if !ok {
		return nil, invalidArg("unexpected reference %q", repo)
	}
	return t, nil
}

func (s *Server) postImageTag(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	repo := r.Form.Get("repo")
	if repo == "" {
		return invalidArg("repository name must have at least one component")
	}
	ref, err := repoTagReference(repo, r.Form.Get("tag"))
	if err != nil {
		return err
	}
	familiar := reference.FamiliarName(ref)
	if familiar == string(digest.Canonical) {
		return invalidArg("refusing to create an ambiguous tag using digest algorithm as name")
	}
	if err := s.backend.TagImage(r.Context(), vars["name"], ref); err != nil {
		return err
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

func (s *Server) deleteImage(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	name := vars["name"]
	if strings.TrimSpace(name) == "" {
		return invalidArg("image name cannot be blank")
	}
	// platforms (API 1.50): one JSON platform per value; those platforms
	// are removed from the image, which stays while others remain.
	var ps []ocispec.Platform
	if versionAtLeast(apiVersionFrom(r.Context()), "1.50") {
		for _, v := range r.Form["platforms"] {
			p, err := decodePlatformJSON(v)
			if err != nil {
				return err
			}
			ps = append(ps, *p)
		}
	}
	var list []image.DeleteResponse
	var err error
	if len(ps) > 0 {
		list, err = s.backend.ImageDeletePlatforms(r.Context(), name, ps, boolValue(r, "force"), !boolValue(r, "noprune"))
	} else {
		list, err = s.backend.ImageDelete(r.Context(), name, boolValue(r, "force"), !boolValue(r, "noprune"))
	}
	if err != nil {
		return err
	}
	if list == nil {
		list = []image.DeleteResponse{}
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) postImagesPrune(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	f, err := parseFilters(r)
	if err != nil {
		return err
	}
	if err := validateFilters(f, "dangling", "label", "label!", "until"); err != nil {
		return err
	}
	rep, err := s.backend.ImagesPrune(r.Context(), f)
	if err != nil {
		return err
	}
	if rep == nil {
		rep = &image.PruneReport{}
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// getDistribution answers GET /distribution/{name}/json.
func (s *Server) getDistribution(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	name := vars["name"]
	if _, err := reference.ParseAnyReference(name); err != nil {
		return invalidArg("%v", err)
	}
	auth, err := decodeAuth(r)
	if err != nil {
		return err
	}
	di, err := s.backend.DistributionInspect(r.Context(), name, types.RemoteInspectOptions{
		Auth:        auth,
		MetaHeaders: metaHeaders(r),
	})
	if err != nil {
		return err
	}
	if di == nil {
		return errors.New("registry returned no descriptor")
	}
	writeJSON(w, http.StatusOK, di)
	return nil
}
