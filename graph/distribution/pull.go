package distribution

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/registry"

	"github.com/wharfproject/wharf/graph/store"

	"github.com/wharfproject/wharf/imagespec"
)

// PullImage pulls FromImage[:Tag|@digest] (all tags when neither is given)
// and streams dockerd's progress messages to out. The name is resolved
// before the first message, so a missing repository or tag is a plain
// errdefs.ErrNotFound the server can answer with 404.
func (s *Service) PullImage(ctx context.Context, opts types.PullOptions, out types.ProgressWriter) error {
	// `docker pull -a name` sends fromImage=name: with a trailing colon.
	tn, err := splitTypedName(strings.TrimSuffix(opts.FromImage, ":"))
	if err != nil {
		return err
	}
	if opts.Tag != "" && tn.Digest == "" {
		if d, derr := digest.Parse(opts.Tag); derr == nil {
			tn.Digest, tn.Tag = d, ""
		} else {
			tn.Tag = opts.Tag
		}
	}
	if isScratch(tn.Repo) {
		return fmt.Errorf("'scratch' is a reserved name%.0w", errdefs.ErrPermissionDenied)
	}
	creds := credentials(opts.Auth, opts.MetaHeaders)
	platform := s.platformOr(opts.Platform)
	po := newProgressOutput(out)

	if tn.pin() == "" {
		return s.pullAllTags(ctx, tn, creds, platform, po)
	}
	res, err := s.resolveRemote(ctx, tn, creds)
	if err != nil {
		return pullNotFound(tn, err)
	}
	upToDate, err := s.pullResolved(ctx, res, platform, opts.Platform != nil, po)
	if err != nil {
		return err
	}
	return writePullStatus(po, reference.FamiliarString(res.Ref), upToDate)
}

func isScratch(repo string) bool {
	n, err := reference.ParseNormalizedNamed(repo)
	return err == nil && reference.FamiliarName(n) == "scratch"
}

// pullNotFound words a missing repository or tag like dockerd:
// "manifest for NAME:TAG not found: <registry's reason>".
func pullNotFound(tn typedName, err error) error {
	if !errdefs.IsNotFound(err) || strings.HasPrefix(err.Error(), "manifest for ") {
		return err
	}
	ref := tn.Repo
	if n, perr := reference.ParseNormalizedNamed(tn.Repo); perr == nil {
		if r, werr := tn.withPin(n); werr == nil {
			ref = reference.FamiliarString(r)
		}
	}
	return fmt.Errorf("manifest for %s not found: %w", ref, err)
}

func writePullStatus(po *progressOutput, ref string, upToDate bool) error {
	if upToDate {
		return po.status("", "Status: Image is up to date for "+ref)
	}
	return po.status("", "Status: Downloaded newer image for "+ref)
}

// pullAllTags pulls every tag of the repository (docker pull -a).
func (s *Service) pullAllTags(ctx context.Context, tn typedName, creds registry.Credentials, platform ocispec.Platform, po *progressOutput) error {
	svc, err := s.registryService()
	if err != nil {
		return err
	}
	cands, err := svc.Candidates(tn.Repo)
	if err != nil {
		return err
	}
	var (
		repo    *registry.Repository
		name    reference.Named
		tags    []string
		lastErr error
	)
	for _, c := range cands {
		r, err := svc.Repository(ctx, reference.TrimNamed(c), creds)
		if err != nil {
			return err
		}
		t, err := r.Tags(ctx)
		if err == nil && len(t) > 0 {
			repo, name, tags = r, reference.TrimNamed(c), t
			break
		}
		if err != nil && !errdefs.IsNotFound(err) {
			return err
		}
		lastErr = err
	}
	if repo == nil {
		if lastErr == nil {
			lastErr = fmt.Errorf("repository %s has no tags%.0w", tn.Repo, errdefs.ErrNotFound)
		}
		return lastErr
	}
	allUpToDate := true
	for _, tag := range tags {
		ref, err := reference.WithTag(name, tag)
		if err != nil {
			continue // a registry listing a malformed tag: skip it, as dockerd does
		}
		desc, err := repo.Resolve(ctx, tag)
		if err != nil {
			return err
		}
		upToDate, err := s.pullResolved(ctx, &resolvedRemote{Repo: repo, Ref: ref, Desc: desc}, platform, false, po)
		if err != nil {
			return err
		}
		allUpToDate = allUpToDate && upToDate
	}
	return writePullStatus(po, reference.FamiliarName(name), allUpToDate)
}

// pullResolved pulls one resolved manifest: top level, platform manifest,
// config and layers, all verified; the image becomes visible (PutImage)
// only after every blob is stored. It reports whether the reference already
// named this exact image.
// With strict (a platform the user asked for), a single-platform image of
// another platform is refused, as dockerd does.
func (s *Service) pullResolved(ctx context.Context, res *resolvedRemote, platform ocispec.Platform, strict bool, po *progressOutput) (bool, error) {
	ref := res.Ref
	id := reference.FamiliarString(ref)
	if t, ok := ref.(reference.Tagged); ok {
		if _, digested := ref.(reference.Digested); !digested {
			id = t.Tag()
		}
	}
	// dockerd names the repository by its path: "library/busybox", "tiny".
	if err := po.status(id, "Pulling from "+reference.Path(ref)); err != nil {
		return false, err
	}

	top := res.Desc
	topBytes, err := res.Repo.FetchManifest(ctx, top)
	if err != nil {
		return false, err
	}
	if top.MediaType == "" {
		top.MediaType = imagespec.Sniff(topBytes)
	}
	top = ocispec.Descriptor{MediaType: top.MediaType, Digest: top.Digest, Size: int64(len(topBytes))}

	plat, manBytes := top, topBytes
	if imagespec.IsIndex(top.MediaType) {
		var idx ocispec.Index
		if err := json.Unmarshal(topBytes, &idx); err != nil {
			return false, fmt.Errorf("parse index %s: %w", top.Digest, err)
		}
		plat, err = registry.SelectManifest(&idx, platform)
		if err != nil {
			return false, err
		}
		if manBytes, err = res.Repo.FetchManifest(ctx, plat); err != nil {
			return false, err
		}
	}
	if imagespec.IsSchema1(plat.MediaType) || imagespec.IsSchema1(imagespec.Sniff(manBytes)) {
		return false, fmt.Errorf("%s: schema1 manifests are not supported: push the image again with a current client%.0w", id, errdefs.ErrNotImplemented)
	}
	// The registry package has refused documents that contradict their
	// media type; an index whose entry is another index is still possible.
	host := res.Repo.Info().Index.Name
	if plat.Digest != top.Digest && (imagespec.IsIndex(plat.MediaType) || imagespec.IsIndex(imagespec.Sniff(manBytes))) {
		return false, fmt.Errorf("registry %s: index entry %s is itself an index%.0w", host, plat.Digest, errdefs.ErrInvalidArgument)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(manBytes, &man); err != nil {
		return false, fmt.Errorf("registry %s: parse manifest %s: %w", host, plat.Digest, err)
	}
	if err := man.Config.Digest.Validate(); err != nil {
		return false, fmt.Errorf("registry %s: manifest %s has no valid config digest%.0w", host, plat.Digest, errdefs.ErrInvalidArgument)
	}
	if plat.MediaType == "" {
		plat.MediaType = imagespec.Sniff(manBytes)
	}
	config, err := res.Repo.FetchConfig(ctx, man.Config)
	if err != nil {
		return false, err
	}
	if strict && !imagespec.IsIndex(top.MediaType) {
		if have := imagespec.ConfigPlatform(config); have != nil && !imagespec.PlatformMatches(platform, *have) {
			return false, fmt.Errorf("image with reference %s was found but its platform (%s) does not match the specified platform (%s)%.0w",
				reference.FamiliarString(ref), imagespec.FormatPlatform(*have), imagespec.FormatPlatform(platform), errdefs.ErrNotFound)
		}
	}

	if err := checkDiffIDs(host, man, config); err != nil {
		return false, err
	}

	upToDate := false
	if cur, err := s.st.Lookup(ref.String()); err == nil && cur.Target.Digest == top.Digest && cur.ID == man.Config.Digest {
		upToDate = true
	}
	// The lease pins every blob of the image from the moment it is checked
	// ("Already exists") or written until the record is committed, so an
	// rmi of an image sharing them cannot take them away mid-pull; if the
	// pull fails, releasing it reclaims what it wrote.
	lease := s.st.NewLease()
	defer lease.Release()
	dst := leaseIngester{lease}
	// dockerd shows no layer lines when the image is already complete.
	if !dst.HasBlob(man.Config.Digest) || !hasAll(dst, man.Layers) {
		if err := s.remote.downloadLayers(ctx, res.Repo, dst, man.Layers, po); err != nil {
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
	rec := store.ImageRecord{ID: man.Config.Digest, Target: top, Manifest: plat}
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
	s.logEvent(ctx, reference.FamiliarString(ref), events.ActionPull, map[string]string{"name": reference.FamiliarString(ref)})
	return upToDate, nil
}

// hasAll reports whether every blob of descs is stored (pinning each).
func hasAll(dst blobIngester, descs []ocispec.Descriptor) bool {
	all := true
	for _, d := range descs {
		all = dst.HasBlob(d.Digest) && all
	}
	return all
}

// leaseIngester is the content store as a pull sees it: through its lease,
// so that every blob it asks about or writes is pinned.
type leaseIngester struct{ l *store.Lease }

func (li leaseIngester) HasBlob(d digest.Digest) bool { return li.l.Has(d) }

func (li leaseIngester) WriteBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader) error {
	_, err := li.l.WriteBlob(ctx, desc, r)
	return err
}

// checkDiffIDs refuses an image whose config does not describe its layers:
// one DiffID per layer, and for an uncompressed tar layer (whose DiffID is
// its digest) the same value. dockerd refuses such pulls when it unpacks;
// wharf keeps the layers packed, so it checks what it can without
// decompressing, and a later `wharf load` of its own save would refuse the
// rest.
func checkDiffIDs(host string, man ocispec.Manifest, config []byte) error {
	cfg, err := store.ParseImageConfig(config)
	if err != nil {
		return fmt.Errorf("registry %s: config %s: %w", host, man.Config.Digest, err)
	}
	ids := cfg.RootFS.DiffIDs
	if len(ids) != len(man.Layers) {
		return fmt.Errorf("registry %s: image config %s lists %d diff IDs for %d layers", host, man.Config.Digest, len(ids), len(man.Layers))
	}
	for i, ld := range man.Layers {
		if imagespec.IsUncompressedLayer(ld.MediaType) && ld.Digest != ids[i] {
			return fmt.Errorf("registry %s: layer %s is uncompressed, so its diff ID must be its digest; image config %s says %s", host, ld.Digest, man.Config.Digest, ids[i])
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
