package distribution

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/imageref"
	"github.com/wharfproject/wharf/registry"
)

// PullImage pulls opts.Ref (all tags when it has neither tag nor digest)
// and streams dockerd's progress messages to out. The name is resolved
// before the first message, so a missing repository or tag is a plain
// errdefs.ErrNotFound the server can answer with 404.
func (s *Service) PullImage(ctx context.Context, opts types.PullOptions, out types.ProgressWriter) error {
	if opts.Ref.IsZero() {
		return fmt.Errorf("no image to pull%.0w", errdefs.ErrInvalidArgument)
	}
	defer s.transfers.pullStarted()() // wharf_pulls_in_flight (metrics.go)
	ref := opts.Ref
	creds := credentials(opts.Auth, opts.Registries, opts.MetaHeaders)
	platform := s.platformOr(opts.Platform)
	po := newProgressOutput(out)
	svc, err := s.registryService()
	if err != nil {
		return err
	}
	if ref.Tag() == "" && ref.Digest() == "" {
		return s.pullAllTags(ctx, svc, ref, creds, platform, po)
	}
	res, err := svc.FindImage(ctx, ref, creds)
	if err != nil {
		return pullError(ref, creds, err)
	}
	// The policy decides before the first message: a refusal is a plain
	// 403 that every client prints as it is (trust.go).
	verdict, choice, err := s.admitPull(ctx, res, platform)
	if err != nil {
		return err
	}
	upToDate, err := s.pullResolved(ctx, res, platform, choice, opts.Platform != nil, verdict, po)
	if err != nil {
		return err
	}
	pulled := res.Ref()
	// dockerd's pull event: the actor is the reference pulled, "name" its
	// repository, plus the image's labels (so --filter label= finds it).
	var labels map[string]string
	if rec, err := s.st.Lookup(pulled.String()); err == nil {
		labels = s.st.Labels(rec)
	}
	store.Emit(ctx, s.events, store.NewEvent(reference.FamiliarString(pulled), events.ActionPull, reference.FamiliarName(pulled), labels))
	return writePullStatus(po, reference.FamiliarString(pulled), upToDate)
}

// pullError words a registry's refusal as dockerd does for a pull. The
// docker CLI answers a daemon's 401 on POST /images/create by prompting
// for a password — on a terminal or not, so a script hangs — and dockerd
// never sends one: a denied or unknown repository (or any refusal of an
// anonymous pull) is 404 "pull access denied for NAME, repository does not
// exist or may require 'docker login'"; a refusal of the credentials sent
// is a plain 500 with the registry's reason.
func pullError(ref imageref.Ref, creds registry.Credentials, err error) error {
	if !errors.Is(err, registry.ErrUnauthorized) {
		return err
	}
	name := reference.FamiliarName(ref.Named())
	if errors.Is(err, registry.ErrDenied) || (creds.Auth == nil && len(creds.Registries) == 0) {
		return fmt.Errorf("pull access denied for %s, repository does not exist or may require 'docker login': %v%.0w", name, err, errdefs.ErrNotFound)
	}
	return statusError{err: err, status: http.StatusInternalServerError}
}

// statusError gives err another HTTP status while keeping it in the chain.
type statusError struct {
	err    error
	status int
}

func (e statusError) Error() string   { return e.err.Error() }
func (e statusError) Unwrap() error   { return e.err }
func (e statusError) HTTPStatus() int { return e.status }

func writePullStatus(po *progressOutput, ref string, upToDate bool) error {
	if upToDate {
		return po.status("", "Status: Image is up to date for "+ref)
	}
	return po.status("", "Status: Downloaded newer image for "+ref)
}

// pullAllTags pulls every tag of the repository (docker pull -a), found
// as FindImage finds a name (registry.Service.ListTags).
func (s *Service) pullAllTags(ctx context.Context, svc *registry.Service, ref imageref.Ref, creds registry.Credentials, platform ocispec.Platform, po *progressOutput) error {
	repo, tags, err := svc.ListTags(ctx, ref, creds, registry.TagsOptions{})
	if err != nil {
		return pullError(ref, creds, err)
	}
	allUpToDate := true
	for _, tag := range tags {
		if _, err := reference.WithTag(repo.Info().Name, tag); err != nil {
			continue // a registry listing a malformed tag: skip it, as dockerd does
		}
		res, err := repo.FetchTop(ctx, tag)
		if err != nil {
			return err
		}
		verdict, choice, err := s.admitPull(ctx, res, platform)
		if err != nil {
			return err
		}
		upToDate, err := s.pullResolved(ctx, res, platform, choice, false, verdict, po)
		if err != nil {
			return err
		}
		allUpToDate = allUpToDate && upToDate
	}
	name := reference.FamiliarName(repo.Info().Name)
	store.Emit(ctx, s.events, store.NewEvent(name, events.ActionPull, name, nil))
	return writePullStatus(po, name, allUpToDate)
}

// pullResolved pulls one resolved manifest: top level, platform manifest,
// config and layers, all verified; the image becomes visible (PutImage)
// only after every blob is stored. It reports whether the reference already
// named this exact image.
// With strict (a platform the user asked for), a single-platform image of
// another platform is refused, as dockerd does.
// The verdict the policy gave (nil: none) is recorded with the image, and
// the platform manifest it judged (choice) is the one pulled; with none
// judged, it is chosen here, after the first message.
func (s *Service) pullResolved(ctx context.Context, res *registry.Resolved, platform ocispec.Platform, choice *registry.Choice, strict bool, verdict *types.Trust, po *progressOutput) (bool, error) {
	ref := res.Ref()
	id := reference.FamiliarString(ref)
	if res.Tag != "" {
		id = res.Tag
	}
	// dockerd names the repository by its path: "library/busybox", "tiny".
	if err := po.status(id, "Pulling from "+reference.Path(ref)); err != nil {
		return false, err
	}
	var img *registry.RemoteImage
	var err error
	if choice != nil {
		img, err = res.ImageOf(ctx, *choice)
	} else {
		img, err = res.Image(ctx, platform)
	}
	if err != nil {
		return false, err
	}
	if img.V1 || img.Parsed == nil {
		return false, fmt.Errorf("%s: schema1 manifests are not supported: push the image again with a current client%.0w", id, errdefs.ErrNotImplemented)
	}
	man, config := *img.Parsed, img.ConfigBytes
	top, plat, host := res.Descriptor, img.Manifest, res.Registry
	topBytes, manBytes := res.Raw, img.ManifestBytes
	if strict && res.Index == nil {
		if have := imagespec.ConfigPlatform(config); have != nil && !imagespec.PlatformMatches(platform, *have) {
			return false, fmt.Errorf("image with reference %s was found but its platform (%s) does not match the specified platform (%s)%.0w",
				reference.FamiliarString(ref), imagespec.FormatPlatform(*have), imagespec.FormatPlatform(platform), errdefs.ErrNotFound)
		}
	}
	if err := checkDiffIDs(host, man, config); err != nil {
		return false, err
	}

	upToDate := false
	if cur, err := s.st.Lookup(ref.String()); err == nil && cur.Target.Digest == top.Digest {
		// Up to date when the reference's image holds this platform
		// already (it may be recorded under another present one).
		for _, p := range cur.Present() {
			upToDate = upToDate || p.Config == man.Config.Digest
		}
	}
	// The lease pins every blob of the image from the moment it is checked
	// ("Already exists") or written until the record is committed, so an
	// rmi of an image sharing them cannot take them away mid-pull; if the
	// pull fails, releasing it reclaims what it wrote.
	lease := s.st.NewLease()
	defer lease.Release()
	dst := leaseIngester{lease}
	// dockerd shows no layer lines when the image is already complete.
	// What is stored is asked once; the download reads the answer.
	haveConfig := dst.HasBlob(man.Config.Digest)
	plan := planLayers(dst, man.Layers)
	if !haveConfig || !plan.complete() {
		if err := s.transfers.download(ctx, res.Repository(), dst, plan, po); err != nil {
			return false, err
		}
	}

	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{man.Config, config}, {plat, manBytes}, {top, topBytes}} {
		if _, err := lease.WriteBlob(ctx, b.desc, bytes.NewReader(b.data)); err != nil {
			return false, fmt.Errorf("store %s: %w", b.desc.Digest, err)
		}
	}
	rec := store.ImageRecord{ID: man.Config.Digest, Target: top, Manifest: plat, Trust: verdict}
	name := reference.TrimNamed(ref)
	if c, err := reference.WithDigest(name, top.Digest); err == nil {
		rec.RepoDigests = []string{c.String()}
	}
	if _, ok := ref.(reference.Tagged); ok {
		rec.RepoTags = []string{ref.String()}
		rec.LastTagTime = time.Now().UTC()
	}
	if err := s.st.Put(lease, rec); err != nil {
		return false, err
	}
	if err := po.status("", "Digest: "+top.Digest.String()); err != nil {
		return false, err
	}
	return upToDate, nil
}

// leaseIngester is the content store as a pull sees it: through its lease,
// so that every blob it asks about or writes is pinned.
type leaseIngester struct{ l *store.Lease }

func (li leaseIngester) HasBlob(d digest.Digest) bool { return li.l.Has(d) }

func (li leaseIngester) WriteBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader, opts ...store.WriteOpt) error {
	_, err := li.l.WriteBlob(ctx, desc, r, opts...)
	return err
}

// checkDiffIDs refuses an image whose config does not describe its layers:
// one DiffID per layer, and for an uncompressed tar layer (whose DiffID is
// its digest) the same value. dockerd refuses such pulls when it unpacks;
// wharf keeps the layers packed, so it checks what it can without
// decompressing, and a later `wharf load` of its own save would refuse the
// rest. A config that does not parse or contradicts its manifest is the
// registry's fault: registry.ErrUpstream (502), as for any other malformed
// or self-contradictory document.
func checkDiffIDs(host string, man ocispec.Manifest, config []byte) error {
	cfg, err := store.ParseImageConfig(config)
	if err != nil {
		return fmt.Errorf("registry %s: config %s: %w%.0w", host, man.Config.Digest, err, registry.ErrUpstream)
	}
	ids := cfg.RootFS.DiffIDs
	if len(ids) != len(man.Layers) {
		return fmt.Errorf("registry %s: image config %s lists %d diff IDs for %d layers%.0w", host, man.Config.Digest, len(ids), len(man.Layers), registry.ErrUpstream)
	}
	for i, ld := range man.Layers {
		if imagespec.IsUncompressedLayer(ld.MediaType) && ld.Digest != ids[i] {
			return fmt.Errorf("registry %s: layer %s is uncompressed, so its diff ID must be its digest; image config %s says %s%.0w", host, ld.Digest, man.Config.Digest, ids[i], registry.ErrUpstream)
		}
	}
	return nil
}

// hasAllBlobs reports whether every blob of descs is stored.
func hasAllBlobs(p store.Provider, descs []ocispec.Descriptor) bool {
	for _, d := range descs {
		if !p.HasBlob(d.Digest) {
			return false
		}
	}
	return true
}

// admitPull is admit for a pull of res on platform: the platform manifest
// an index offers is judged too, and returned, so that the pull reads the
// manifest that was judged (nil when none was chosen here).
func (s *Service) admitPull(ctx context.Context, res *registry.Resolved, platform ocispec.Platform) (*types.Trust, *registry.Choice, error) {
	if s.policy() == nil {
		return nil, nil, nil
	}
	var choice *registry.Choice
	var plat digest.Digest
	if res.Index != nil {
		c, err := res.Choose(ctx, platform)
		if err != nil {
			return nil, nil, err
		}
		choice, plat = &c, c.Descriptor.Digest
	}
	t, err := s.admit(ctx, "pull", res, plat)
	return t, choice, err
}
