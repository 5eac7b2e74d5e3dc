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
	"github.com/wharfproject/wharf/registry"

	"github.com/wharfproject/wharf/graph/store"

	"github.com/wharfproject/wharf/imagespec"
)

// PushImage pushes the local tags of a repository (one tag, or all when
// opts.Tag is empty) and streams dockerd's progress messages. Like dockerd,
// it names the repository first and reports a missing local image in-stream.
func (s *Service) PushImage(ctx context.Context, opts types.PushOptions, out types.ProgressWriter) error {
	named, err := reference.ParseNormalizedNamed(opts.Name)
	if err != nil {
		return fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
	}
	repoName := reference.TrimNamed(named) // a tag in the name is ignored
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

	repo, err := svc.Repository(ctx, repoName, credentials(opts.Auth, opts.MetaHeaders))
	if err != nil {
		return err
	}
	for _, tag := range tags {
		if err := s.pushTag(ctx, repo, repoName, tag, imgs[tag], opts.Platform != nil, po); err != nil {
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

// pushManifest is one manifest to upload with its parsed content.
type pushManifest struct {
	desc  ocispec.Descriptor
	bytes []byte
	man   ocispec.Manifest
}

// pushTag uploads one image: layers, config(s), platform manifest(s), and
// the index when the image was pulled or loaded as one and every platform
// of it is stored locally. A pull keeps only the chosen platform, so such an
// index names manifests this store does not have and a registry would refuse
// it: then only the platform manifest is pushed, and its digest is the
// one reported and recorded.
//
// onePlatform (push --platform, checked by the caller) pushes the platform
// manifest alone, never the index.
func (s *Service) pushTag(ctx context.Context, repo *registry.Repository, repoName reference.Named, tag string, img *store.ImageRecord, onePlatform bool, po *progressOutput) error {
	lease := s.st.NewLease()
	defer lease.Release()
	if err := lease.AddImage(img); err != nil {
		return err
	}
	pm, err := s.readPushManifest(img.Manifest)
	if err != nil {
		return err
	}
	manifests := []pushManifest{pm}
	top, topBytes := pm.desc, pm.bytes
	if !onePlatform && imagespec.IsIndex(img.Target.MediaType) && img.Target.Digest != img.Manifest.Digest {
		if children, idxBytes, ok := s.localIndex(img.Target); ok {
			manifests = children
			top = ocispec.Descriptor{MediaType: img.Target.MediaType, Digest: img.Target.Digest, Size: int64(len(idxBytes))}
			topBytes = idxBytes
		}
	}

	var layers, configs []ocispec.Descriptor
	seen := map[string]bool{}
	for _, m := range manifests {
		for _, l := range m.man.Layers {
			if !seen[l.Digest.String()] {
				seen[l.Digest.String()] = true
				layers = append(layers, l)
			}
		}
		if !seen[m.man.Config.Digest.String()] {
			seen[m.man.Config.Digest.String()] = true
			configs = append(configs, m.man.Config)
		}
	}

	mountFrom := mountSources(repoName, img)
	if err := s.pushLayers(ctx, repo, mountFrom, layers, po); err != nil {
		return err
	}
	for _, c := range configs {
		if _, _, err := s.transferBlob(ctx, repo, c, mountFrom, nil); err != nil {
			return fmt.Errorf("push config %s: %w", c.Digest, err)
		}
	}
	for _, m := range manifests {
		if m.desc.Digest == top.Digest {
			continue
		}
		if err := repo.PushManifest(ctx, m.desc, m.bytes, ""); err != nil {
			return fmt.Errorf("push manifest %s: %w", m.desc.Digest, err)
		}
	}
	if err := repo.PushManifest(ctx, top, topBytes, tag); err != nil {
		return fmt.Errorf("push manifest %s: %w", top.Digest, err)
	}

	if err := po.status("", fmt.Sprintf("%s: digest: %s size: %d", tag, top.Digest, len(topBytes))); err != nil {
		return err
	}
	aux, err := json.Marshal(types.PushResult{Tag: tag, Digest: top.Digest.String(), Size: len(topBytes)})
	if err != nil {
		return err
	}
	raw := json.RawMessage(aux)
	if err := po.write(jsonstream.Message{Progress: &jsonstream.Progress{}, Aux: &raw}); err != nil {
		return err
	}

	// The local image now carries the digest the registry knows it by.
	if c, err := reference.WithDigest(repoName, top.Digest); err == nil {
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

func (s *Service) readPushManifest(desc ocispec.Descriptor) (pushManifest, error) {
	b, err := s.st.ReadBlob(desc.Digest, store.MaxManifestSize)
	if err != nil {
		return pushManifest{}, fmt.Errorf("read manifest %s: %w", desc.Digest, err)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(b, &man); err != nil {
		return pushManifest{}, fmt.Errorf("parse manifest %s: %w", desc.Digest, err)
	}
	mt := desc.MediaType
	if mt == "" {
		mt = imagespec.Sniff(b)
	}
	return pushManifest{desc: ocispec.Descriptor{MediaType: mt, Digest: desc.Digest, Size: int64(len(b))}, bytes: b, man: man}, nil
}

// localIndex returns the manifests of index target when each of them, its
// config and its layers are stored.
func (s *Service) localIndex(target ocispec.Descriptor) ([]pushManifest, []byte, bool) {
	b, err := s.st.ReadBlob(target.Digest, store.MaxManifestSize)
	if err != nil {
		return nil, nil, false
	}
	var idx ocispec.Index
	if json.Unmarshal(b, &idx) != nil || len(idx.Manifests) == 0 {
		return nil, nil, false
	}
	var out []pushManifest
	for _, d := range idx.Manifests {
		if imagespec.IsIndex(d.MediaType) || !s.st.HasBlob(d.Digest) {
			return nil, nil, false // nested indexes are not walked
		}
		pm, err := s.readPushManifest(d)
		if err != nil || !s.st.HasBlob(pm.man.Config.Digest) || !hasAllBlobs(s.st, pm.man.Layers) {
			return nil, nil, false
		}
		pm.desc.MediaType = d.MediaType
		if pm.desc.MediaType == "" {
			pm.desc.MediaType = imagespec.Sniff(pm.bytes)
		}
		out = append(out, pm)
	}
	return out, b, true
}

// pushLayers uploads layers, at most maxConcurrentUploads at a time
// (eachBounded): "Preparing" for each, "Waiting" while no slot is free,
// then "Layer already exists", "Mounted from <repo>" or Pushing… "Pushed".
func (s *Service) pushLayers(ctx context.Context, repo *registry.Repository, mountFrom []string, layers []ocispec.Descriptor, po *progressOutput) error {
	for _, l := range layers {
		if err := po.layer(shortID(l.Digest), "Preparing"); err != nil {
			return err
		}
	}
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	waiting := func(l ocispec.Descriptor) error { return po.layer(shortID(l.Digest), "Waiting") }
	return eachBounded(stop, cancel, maxConcurrentUploads, waiting, func(l ocispec.Descriptor) error {
		return s.pushLayer(ctx, repo, l, mountFrom, po)
	}, layers)
}

func (s *Service) pushLayer(ctx context.Context, repo *registry.Repository, l ocispec.Descriptor, mountFrom []string, po *progressOutput) error {
	id := shortID(l.Digest)
	how, from, err := s.transferBlob(ctx, repo, l, mountFrom, po)
	switch {
	case err != nil:
		return fmt.Errorf("push layer %s: %w", l.Digest, err)
	case how == registry.BlobExisted:
		return po.layer(id, "Layer already exists")
	case how == registry.BlobMounted:
		return po.layer(id, "Mounted from "+from)
	default:
		return po.layer(id, "Pushed")
	}
}

// transferBlob makes the registry have desc through the one blob-transfer
// path push and copy share (registry.Repository.TransferBlob): nothing when
// it has it, a cross-repository mount from a repository where the blob is
// known to be, else an upload streamed from disk, reported as "Pushing"
// when po is set.
func (s *Service) transferBlob(ctx context.Context, repo *registry.Repository, desc ocispec.Descriptor, mountFrom []string, po *progressOutput) (how registry.BlobTransfer, from string, err error) {
	return repo.TransferBlob(ctx, desc, mountFrom, func(context.Context) (io.ReadCloser, error) { return s.openForPush(desc, po) })
}

// openForPush opens a stored blob for upload, reporting "Pushing" progress
// when po is given.
func (s *Service) openForPush(desc ocispec.Descriptor, po *progressOutput) (io.ReadCloser, error) {
	f, _, err := s.st.OpenBlob(desc.Digest)
	if err != nil {
		return nil, err
	}
	rc := s.transfers.countPushed(f) // wharf_pushed_bytes_total (metrics.go)
	if po == nil {
		return rc, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{newProgressReader(rc, po, shortID(desc.Digest), "Pushing", desc.Size), rc}, nil
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
