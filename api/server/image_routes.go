package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// imageListFilters are the filters GET /images/json accepts.
var imageListFilters = []string{"before", "dangling", "label", "reference", "since", "until"}

func (s *Server) getImagesJSON(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	f, err := parseFilters(r)
	if err != nil {
		return err
	}
	version := apiVersionFrom(r.Context())
	if versionLess(version, "1.41") {
		// The old `filter` parameter is a reference glob.
		if ref := r.Form.Get("filter"); ref != "" {
			if f["reference"] == nil {
				f["reference"] = map[string]bool{}
			}
			f["reference"][ref] = true
		}
	}
	if err := validateFilters(f, imageListFilters...); err != nil {
		return err
	}
	opts := types.ImageListOptions{
		All:       boolValue(r, "all"),
		Digests:   boolValue(r, "digests"),
		Manifests: versionAtLeast(version, "1.47") && boolValue(r, "manifests"),
		Identity:  versionAtLeast(version, "1.54") && boolValue(r, "identity"),
		Filters:   f,
	}
	if opts.Identity && !opts.Manifests {
		return invalidArg("conflicting options: identity requires manifests=1")
	}
	return streamImageList(w, r, s.backend, opts, version)
}

// streamImageList writes GET /images/json an entry at a time, the same
// bytes writeJSON writes of the whole list: at 50,000 images the list,
// its entries' JSON and the array's were each held whole (~250 MB of heap
// at the peak). An error before the first entry is answered as usual;
// one after it (the header is sent) aborts the connection, so that a
// client never takes a cut list for a whole one.
func streamImageList(w http.ResponseWriter, r *http.Request, st ImageBackend, opts types.ImageListOptions, version string) error {
	var bw *bufio.Writer
	err := st.ImagesEach(r.Context(), opts, func(img image.Summary) error {
		b, err := gateImageSummary(img, version)
		if err != nil {
			return err
		}
		// As json.Marshal writes a RawMessage in a list: compacted, with
		// <, > and & escaped.
		if b, err = json.Marshal(b); err != nil {
			return err
		}
		sep := byte(',')
		if bw == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			bw = bufio.NewWriterSize(w, 32<<10)
			sep = '['
		}
		bw.WriteByte(sep)
		_, err = bw.Write(b)
		return err
	})
	if err != nil && bw == nil {
		return err
	}
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if bw == nil {
		writeJSON(w, http.StatusOK, []json.RawMessage{})
		return nil
	}
	bw.WriteString("]\n")
	if err := bw.Flush(); err != nil {
		panic(http.ErrAbortHandler)
	}
	return nil
}

// gateImageSummary applies dockerd's version rules to one entry of GET
// /images/json: <none> placeholders below 1.43, VirtualSize below 1.44,
// Descriptor from 1.48, Containers = -1 below 1.51.
func gateImageSummary(img image.Summary, version string) (json.RawMessage, error) {
	if versionLess(version, "1.43") {
		if len(img.RepoTags) == 0 && len(img.RepoDigests) == 0 {
			img.RepoTags = []string{"<none>:<none>"}
			img.RepoDigests = []string{"<none>@<none>"}
		}
	}
	if img.RepoTags == nil {
		img.RepoTags = []string{}
	}
	if img.RepoDigests == nil {
		img.RepoDigests = []string{}
	}
	if versionLess(version, "1.48") {
		img.Descriptor = nil
	}
	if versionLess(version, "1.51") {
		img.Containers = -1
	}
	if !versionLess(version, "1.44") {
		return rawJSON(img), nil
	}
	m, err := toObject(img)
	if err != nil {
		return nil, err
	}
	m["VirtualSize"] = rawJSON(img.Size)
	return orderedObject(m, nil), nil
}

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
	// `docker pull -a` may send the name with a trailing ":".
	img = strings.TrimSuffix(img, ":")
	tag := r.Form.Get("tag")
	ref, err := reference.ParseNormalizedNamed(img)
	if err != nil {
		return invalidArg("%v", err)
	}
	if tag != "" {
		if _, derr := digest.Parse(tag); derr != nil {
			if _, err := reference.WithTag(reference.TrimNamed(ref), tag); err != nil {
				return invalidArg("%v", err)
			}
		}
	}
	if reference.FamiliarName(ref) == "scratch" {
		return fmt.Errorf("'scratch' is a reserved name%.0w", errdefs.ErrPermissionDenied)
	}
	auth, regs, err := requestCredentials(r, decodeAuth)
	if err != nil {
		return err
	}
	return s.backend.PullImage(r.Context(), types.PullOptions{
		FromImage:   img,
		Tag:         tag,
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

// tarWriter sends the 200 and application/x-tar only with the first byte, so
// that an error before any output (no such image) is a normal error response.
type tarWriter struct {
	w       http.ResponseWriter
	started bool
}

func (t *tarWriter) Write(b []byte) (int, error) {
	if !t.started {
		t.started = true
		t.w.Header().Set("Content-Type", "application/x-tar")
		t.w.WriteHeader(http.StatusOK)
	}
	return t.w.Write(b)
}

func (s *Server) getImagesGet(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	names := r.Form["names"]
	if name, ok := vars["name"]; ok {
		names = []string{name}
	}
	if len(names) == 0 {
		return invalidArg("no image names given")
	}
	ps, err := platformsParam(r, "1.48")
	if err != nil {
		return err
	}
	tw := &tarWriter{w: w}
	err = s.backend.ExportImage(r.Context(), names, ps, tw)
	if err == nil {
		if !tw.started {
			_, _ = tw.Write(nil)
		}
		return nil
	}
	if !tw.started {
		return err
	}
	// Half a tar is already out and a tar has no error frame: abort the
	// connection so the client sees a failed transfer, not a short archive.
	s.log.WithError(err).Error("image export failed after the response started")
	panic(http.ErrAbortHandler)
}

func (s *Server) postImagesLoad(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	// dockerd's default is quiet when the parameter is absent.
	quiet := boolValueOrDefault(r, "quiet", true)
	ps, err := platformsParam(r, "1.48")
	if err != nil {
		return err
	}
	out := newStreamWriter(w, "application/json")
	if err := s.backend.LoadImage(r.Context(), r.Body, quiet, ps, out); err != nil {
		// dockerd reports load errors in-stream even before any output.
		_ = out.WriteMessage(errorMessage(err))
	}
	return out.finish(nil)
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
