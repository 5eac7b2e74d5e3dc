package distribution

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/jsonstream"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry"
)

// PushImage pushes the local tags of a repository (one tag, or all when
// opts.Tag is empty) and streams dockerd's progress messages. Like dockerd,
// it names the repository first and reports a missing local image in-stream.
func (s *Service) PushImage(ctx context.Context, opts types.PushOptions, out types.ProgressWriter) error {
	if opts.Repo == nil {
		return fmt.Errorf("no repository to push%.0w", errdefs.ErrInvalidArgument)
	}
	repoName := reference.TrimNamed(opts.Repo) // parsed by the API server
	svc, err := s.registryService()
	if err != nil {
		return err
	}
	po := newProgressOutput(out)
	if err := po.status("", "The push refers to repository ["+repoName.String()+"]"); err != nil {
		return err
	}

	imgs, err := s.st.ImagesByRepository(repoName.String())
	if err != nil {
		return err
	}
	var tags []string
	if opts.Tag != "" {
		if imgs[opts.Tag] != nil {
			tags = []string{opts.Tag}
		}
	} else {
		for t := range imgs {
			tags = append(tags, t)
		}
		sort.Strings(tags)
	}
	if len(tags) == 0 {
		return fmt.Errorf("An image does not exist locally with the tag: %s%.0w", reference.FamiliarName(repoName), errdefs.ErrNotFound)
	}

	repo, err := svc.Repository(ctx, repoName, credentials(opts.Auth, opts.Registries, opts.MetaHeaders))
	if err != nil {
		return err
	}
	for _, tag := range tags {
		if err := s.pushTag(ctx, repo, repoName, tag, imgs[tag], opts.Platform, po); err != nil {
			return err
		}
	}
	// One event per push, as dockerd logs it: the actor is what was pushed
	// (name:tag, or the repository for --all-tags), "name" the repository,
	// plus the image's labels when one image was pushed.
	name := reference.FamiliarName(repoName)
	actor, labels := name, map[string]string(nil)
	if opts.Tag != "" {
		actor, labels = name+":"+opts.Tag, s.st.Labels(imgs[opts.Tag])
	}
	store.Emit(ctx, s.events, store.NewEvent(actor, events.ActionPush, name, labels))
	return nil
}

// pushTag uploads one image by running its transfer plan with the store as
// the source (plan.go): layers and config(s) side by side, then the
// platform manifest(s), and the index when the image was pulled or loaded as one and every platform
// of it is stored locally. A pull keeps only the chosen platform, so such an
// index names manifests this store does not have and a registry would refuse
// it: then only the platform manifest is pushed, and its digest is the
// one reported and recorded.
//
// platform (push --platform, checked by the caller) pushes that present
// platform's manifest alone, never the index.
func (s *Service) pushTag(ctx context.Context, repo *registry.Repository, repoName reference.Named, tag string, img *store.ImageRecord, platform *ocispec.Platform, po *progressOutput) error {
	lease := s.st.NewLease()
	defer lease.Release()
	if err := lease.AddImage(img); err != nil {
		return err
	}
	onePlatform := platform != nil
	view, err := s.st.PlatformView(img, reference.FamiliarName(repoName)+":"+tag, platform)
	if err != nil {
		return err
	}
	pm, err := s.readStoredManifest(view.Manifest)
	if err != nil {
		return err
	}
	manifests, top := []planManifest{pm}, pm
	if !onePlatform && imagespec.IsIndex(img.Target.MediaType) && img.Target.Digest != img.Manifest.Digest {
		if children, idxBytes, ok := s.localIndex(img.Target); ok {
			manifests = children
			top = planManifest{desc: ocispec.Descriptor{MediaType: img.Target.MediaType, Digest: img.Target.Digest, Size: int64(len(idxBytes))}, bytes: idxBytes}
		} else if len(img.Present()) > 1 && imagespec.BestMatch(s.platform, []ocispec.Platform{s.platformOfManifest(img)}) < 0 {
			// Engine 29 (getPushDescriptor): not every platform is
			// present, several are and none is the daemon's: which one
			// to push is the client's choice.
			return fmt.Errorf("%s:%s: multiple matching manifests found but no specific platform requested; push with --platform%.0w",
				reference.FamiliarName(repoName), tag, errdefs.ErrConflict)
		}
	}
	// Foreign layers too: the store holds them, and the image names them.
	plan := newTransferPlan(top, manifests, true)
	if err := plan.run(ctx, transfer{
		open:      s.openStoredBlob,
		dst:       repo,
		mountFrom: mountSources(repoName, img),
		limit:     maxConcurrentUploads,
		po:        po,
		words:     pushWords,
	}, tag); err != nil {
		return err
	}

	if err := po.status("", fmt.Sprintf("%s: digest: %s size: %d", tag, top.desc.Digest, len(top.bytes))); err != nil {
		return err
	}
	aux, err := json.Marshal(types.PushResult{Tag: tag, Digest: top.desc.Digest.String(), Size: len(top.bytes)})
	if err != nil {
		return err
	}
	raw := json.RawMessage(aux)
	if err := po.write(jsonstream.Message{Progress: &jsonstream.Progress{}, Aux: &raw}); err != nil {
		return err
	}

	// The local image now carries the digest the registry knows it by.
	if c, err := reference.WithDigest(repoName, top.desc.Digest); err == nil {
		_, err := s.st.Update(false, func(tx *store.Txn) error {
			if tx.Image(img.ID) == nil {
				return nil // removed while it was pushed: nothing to record
			}
			return tx.PointRef(c.String(), img.ID)
		})
		if err != nil {
			return fmt.Errorf("record %s: %w", c, err)
		}
	}
	return nil
}

// readStoredManifest reads and parses a manifest from the store.
func (s *Service) readStoredManifest(desc ocispec.Descriptor) (planManifest, error) {
	b, err := s.st.ReadBlob(desc.Digest, store.MaxManifestSize)
	if err != nil {
		return planManifest{}, fmt.Errorf("read manifest %s: %w", desc.Digest, err)
	}
	return parseManifest(desc, b)
}

// localIndex returns the manifests of index target when each of them, its
// config and its layers are stored.
func (s *Service) localIndex(target ocispec.Descriptor) ([]planManifest, []byte, bool) {
	b, err := s.st.ReadBlob(target.Digest, store.MaxManifestSize)
	if err != nil {
		return nil, nil, false
	}
	var idx ocispec.Index
	if json.Unmarshal(b, &idx) != nil || len(idx.Manifests) == 0 {
		return nil, nil, false
	}
	var out []planManifest
	for _, d := range idx.Manifests {
		if imagespec.IsIndex(d.MediaType) || !s.st.HasBlob(d.Digest) {
			return nil, nil, false // nested indexes are not walked
		}
		pm, err := s.readStoredManifest(d) // its media type is d's, else sniffed
		if err != nil || !s.st.HasBlob(pm.man.Config.Digest) || !hasAllBlobs(s.st, pm.man.Layers) {
			return nil, nil, false
		}
		out = append(out, pm)
	}
	return out, b, true
}

// openStoredBlob opens a stored blob for upload from offset (a resumed
// upload), counted in wharf_pushed_bytes_total (metrics.go): the source of
// a push.
func (s *Service) openStoredBlob(_ context.Context, desc ocispec.Descriptor, offset int64) (io.ReadCloser, error) {
	f, _, err := s.st.OpenBlob(desc.Digest)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return s.transfers.countPushed(f), nil
}

// mountSources are the repositories on repoName's registry where img's
// blobs are known to be: those its RepoDigests name (it was pulled from or
// pushed to them). They survive a restart; the registry package adds, per
// blob, the repositories where this daemon read or wrote it
// (TransferBlob). A local tag proves nothing about the registry — trying
// every tagged name cost 2 POSTs per name and blob, each leaving an upload
// session open.
func mountSources(repoName reference.Named, img *store.ImageRecord) []string {
	var out []string
	seen := map[string]bool{reference.Path(repoName): true}
	for _, r := range img.RepoDigests {
		n, err := reference.ParseNormalizedNamed(r)
		if err != nil || reference.Domain(n) != reference.Domain(repoName) {
			continue
		}
		if p := reference.Path(n); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// platformOfManifest is the platform of img's own manifest (the one it is
// recorded under).
func (s *Service) platformOfManifest(img *store.ImageRecord) ocispec.Platform {
	for _, p := range img.Present() {
		if p.Manifest.Digest == img.Manifest.Digest {
			return s.st.PlatformOf(img, p)
		}
	}
	return ocispec.Platform{}
}
