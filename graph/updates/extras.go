package updates

import (
	"context"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/imagespec"
)

// checkExtras adds what the check was asked for beyond the tag's digest:
// the newer versions of a version tag (opts.Newer) and the base's state
// for an image that names its base (opts.Base). down is the registry
// found unreachable in this run: nothing more is asked of it.
func (s *Checker) checkExtras(ctx context.Context, t checkTarget, run *checkRun, down error, res *types.RemoteCheckResult) {
	if run.opts.Newer {
		s.checkNewer(ctx, t, run, down, res)
	}
	if run.opts.Base {
		s.checkBase(ctx, t, run, res)
	}
}

// checkNewer fills the newer-version fields. A local-only tag (never
// pulled nor pushed) is not asked about, as for its digest; a tag that is
// not a version costs nothing.
func (s *Checker) checkNewer(ctx context.Context, t checkTarget, run *checkRun, down error, res *types.RemoteCheckResult) {
	isVersion := isVersionTag(t.ref.Tag())
	res.VersionTag = &isVersion
	if !isVersion || len(t.pulled) == 0 {
		return
	}
	if down != nil {
		res.NewerError = "not asked: " + down.Error()
		return
	}
	listing, err := s.listing(ctx, t.ref, run)
	if err != nil {
		res.NewerError = "listing the tags: " + err.Error()
		return
	}
	n, _ := listing.versions.newer(t.ref.Tag())
	res.NewerPatch, res.NewerMinor, res.NewerMajor = n.Patch, n.Minor, n.Major
	res.NewerCached = listing.cached
}

// imageBase is what an image says it was built on: its manifest's
// annotations, else its config's labels.
func (s *Checker) imageBase(t checkTarget) (name string, dgst digest.Digest, source string, layers []digest.Digest) {
	m, err := s.images.Meta(t.rec)
	if err != nil {
		return "", "", "", nil
	}
	for _, l := range m.Manifest.Layers {
		layers = append(layers, l.Digest)
	}
	pick := func(kv map[string]string) bool {
		name, dgst = kv[types.AnnotationBaseName], digest.Digest(kv[types.AnnotationBaseDigest])
		return name != "" && dgst != ""
	}
	if pick(m.Manifest.Annotations) {
		return name, dgst, "annotations", layers
	}
	if m.Config != nil && pick(m.Config.Config.Labels) {
		return name, dgst, "labels", layers
	}
	return "", "", "", layers
}

// checkBase fills the base fields for an image that names its base, or,
// given opts.BaseName, one that names none (by layer prefix); local images
// too: an image built here is the usual case.
func (s *Checker) checkBase(ctx context.Context, t checkTarget, run *checkRun, res *types.RemoteCheckResult) {
	opts := run.opts
	name, dgst, source, layers := s.imageBase(t)
	if source == "" {
		if opts.BaseName == "" {
			return
		}
		name, source = opts.BaseName, "layers"
	}
	var p ocispec.Platform
	if pp := s.pulledPlatform(t.rec); pp != nil {
		p = *pp
	}
	p = imagespec.NormalizePlatform(imagespec.DefaultPlatform(p))
	res.BaseName, res.BaseDigest, res.BasePlatform, res.BaseSource = name, dgst.String(), imagespec.FormatPlatform(p), source
	if r, err := reference.ParseNormalizedNamed(name); err == nil {
		res.BaseName = reference.FamiliarString(r)
	}
	var (
		ans distribution.BaseAnswer
		err error
	)
	if source == "layers" {
		ans, err = s.dist.CheckBaseLayers(ctx, name, p, layers, opts)
	} else {
		ans, err = run.base(baseKey{name, dgst, res.BasePlatform}, func() (distribution.BaseAnswer, error) {
			return s.dist.CheckBase(ctx, name, dgst, p, opts)
		})
	}
	if ans.Current != "" {
		res.BaseCurrentDigest = ans.Current.String()
	}
	if ans.CurrentPlatform != "" {
		res.BaseCurrentPlatformDigest = ans.CurrentPlatform.String()
	}
	if err != nil {
		res.BaseStatus, res.BaseError = types.BaseUnknown, err.Error()
		return
	}
	res.BaseStatus = ans.Status
}

// baseKey names one base answer of a run.
type baseKey struct {
	name     string
	dgst     digest.Digest
	platform string
}

// base is ask's answer for k, asked once per run.
func (r *checkRun) base(k baseKey, ask func() (distribution.BaseAnswer, error)) (distribution.BaseAnswer, error) {
	return r.bases.Do(k, ask)
}

// repoListing is a repository's tag listing, its versions read once.
type repoListing struct {
	versions tagVersions
	cached   bool // no request was made (younger than the max-age asked for)
}

// listing is the whole tag listing of ref's repository, read once per run
// by repository: the newer-version check of every tag of a repository
// reads one listing walk (or none, within max-age), however many of its
// tags are checked, and tags checked side by side wait for the one walk.
func (s *Checker) listing(ctx context.Context, ref reference.Named, run *checkRun) (repoListing, error) {
	return run.listings.Do(ref.Name(), func() (repoListing, error) {
		l, err := s.dist.TagListing(ctx, ref, run.opts)
		return repoListing{versions: parseTagVersions(l.Tags), cached: l.Cached}, err
	})
}
