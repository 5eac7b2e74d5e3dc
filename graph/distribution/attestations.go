package distribution

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/imageref"
	"github.com/wharfproject/wharf/registry"
)

// GET /images/{name}/attestations (API 1.55): the in-toto statements
// BuildKit attaches to a platform manifest. buildx puts them in the image's
// index as an "attestation manifest" (platform unknown/unknown, annotations
// vnd.docker.reference.type=attestation-manifest and
// vnd.docker.reference.digest=<the platform manifest>), whose layers are
// the statements (application/vnd.in-toto+json), each annotated with its
// in-toto.io/predicate-type. dockerd reads them the same way
// (daemon/containerd/image_attestations.go): only an index can carry them,
// layers without the predicate-type annotation are skipped, and statement
// bodies are read only when asked for.
//
// Everything read here comes from a registry, directly (remote=1) or
// through a pull or load: each document is capped before it is read and
// checked against its digest and size before it is used.

// PredicateTypeAnnotation is the layer annotation BuildKit records the
// in-toto predicate type under.
const PredicateTypeAnnotation = "in-toto.io/predicate-type"

// Bounds of one answer. An SPDX SBOM of a large image is a few MiB (the
// biggest buildx writes for a distro base are ~5 MiB); 32 MiB per statement
// leaves room for that six times over, and 64 MiB for all the bodies of
// one answer keeps the daemon's memory for a request bounded. An index
// carries one attestation manifest per platform manifest; 16 per platform
// and 1,000 statements per manifest are far beyond what BuildKit writes (it
// writes 1–3 statements) and keep a hostile index from making the daemon
// fetch without end.
const (
	maxStatementSize            = 32 << 20
	maxStatementBytes           = 64 << 20
	maxAttestationManifests     = 16
	maxStatementsPerAttestation = 1000
)

// ErrAttestationTooLarge is the class of a statement (or all of them)
// over the bounds above: a registry's document wharfd will not hold, so
// also registry.ErrUpstream (502).
var ErrAttestationTooLarge = fmt.Errorf("attestation too large%.0w", registry.ErrUpstream)

// blobSource reads one document of an image: its bytes, verified against
// desc and at most max long.
type blobSource interface {
	read(ctx context.Context, desc ocispec.Descriptor, max int64) ([]byte, error)
}

// ImageAttestations answers GET /images/{name}/attestations: for a local
// image from the store, with remote=1 from the registry. The statements
// are handed to emit one at a time, in the manifests' order; with
// opts.Statement each carries its body, read, verified and held only for
// the call (emit must not keep it), so an answer near its 64 MiB bound
// holds one statement at a time, not all of them and their JSON.
func (s *Service) ImageAttestations(ctx context.Context, name string, opts types.AttestationOptions, emit func(image.AttestationStatement) error) error {
	if opts.Remote {
		return s.remoteAttestations(ctx, name, opts, emit)
	}
	return s.localAttestations(ctx, name, opts, emit)
}

// localAttestations reads the attestations of a local image. Its index is
// stored (a pull keeps the top level); the attestation manifest and the
// statements are read from the store when it holds them, and otherwise
// from the repository the image was pulled from, by digest — wharfd's
// pull keeps only the platform manifest it pulled (docs/compatibility.md).
func (s *Service) localAttestations(ctx context.Context, name string, opts types.AttestationOptions, emit func(image.AttestationStatement) error) error {
	rec, err := s.st.Lookup(name)
	if err != nil {
		return err
	}
	if !imagespec.IsIndex(rec.Target.MediaType) {
		return nil // a lone manifest has nowhere to keep attestations
	}
	idx, err := s.st.ReadIndex(rec.Target.Digest)
	if err != nil {
		return fmt.Errorf("image %s: index %s: %w", name, rec.Target.Digest, err)
	}
	subject := rec.Manifest
	if opts.Platform != nil {
		if subject, err = imagespec.SelectManifest(idx, *opts.Platform); err != nil {
			return fmt.Errorf("image with reference %s was found but does not provide the specified platform (%s)%.0w",
				name, imagespec.FormatPlatform(*opts.Platform), errdefs.ErrNotFound)
		}
	}
	creds := originCredentials(name, rec, credentials(opts.Auth, opts.Registries, opts.MetaHeaders))
	src := &localSource{s: s, rec: rec, creds: creds}
	return attestationsEach(ctx, src, idx, subject.Digest, opts, emit)
}

// remoteAttestations reads them from the registry: the top level the name
// resolves to now, the attestation manifest and (statement=1) the
// statements, nothing stored.
func (s *Service) remoteAttestations(ctx context.Context, name string, opts types.AttestationOptions, emit func(image.AttestationStatement) error) error {
	if s.reg == nil {
		return ErrNoRegistry
	}
	res, err := findByName(ctx, s.reg, name, credentials(opts.Auth, opts.Registries, opts.MetaHeaders))
	if err != nil {
		return noSuchImage(name, err)
	}
	if res.Index == nil {
		return nil
	}
	want := s.platform
	if opts.Platform != nil {
		want = *opts.Platform
	}
	subject, err := imagespec.SelectManifest(res.Index, want)
	if err != nil {
		return err
	}
	return attestationsEach(ctx, &remoteSource{repo: res.Repository()}, res.Index, subject.Digest, opts, emit)
}

// attestationsEach hands emit the statements of the attestation manifests
// idx attaches to subject, in order: none when there are none. Every bound
// is checked on the descriptors before the first statement is handed
// over, so an answer over them fails whole, before any of it is written.
func attestationsEach(ctx context.Context, src blobSource, idx *ocispec.Index, subject digest.Digest, opts types.AttestationOptions, emit func(image.AttestationStatement) error) error {
	var (
		out   []image.AttestationStatement
		n     int
		total int64
	)
	var atts []ocispec.Descriptor
	for _, d := range idx.Manifests {
		if !imagespec.IsAttestation(d) || digest.Digest(d.Annotations[imagespec.AnnotationReferenceDigest]) != subject {
			continue
		}
		if !imagespec.IsManifest(d.MediaType) {
			continue // not an image manifest: nothing BuildKit writes
		}
		if n++; n > maxAttestationManifests {
			return fmt.Errorf("%s has more than %d attestation manifests%.0w", subject, maxAttestationManifests, ErrAttestationTooLarge)
		}
		atts = append(atts, d)
	}
	for _, d := range atts {
		b, err := src.read(ctx, d, store.MaxManifestSize)
		if err != nil {
			return fmt.Errorf("attestation manifest %s: %w", d.Digest, err)
		}
		layers, err := ParseAttestationManifest(b)
		if err != nil {
			return fmt.Errorf("attestation manifest %s: %w", d.Digest, err)
		}
		for _, l := range layers {
			pt := l.Annotations[PredicateTypeAnnotation]
			if pt == "" || len(opts.PredicateTypes) > 0 && !slices.Contains(opts.PredicateTypes, pt) {
				continue
			}
			out = append(out, image.AttestationStatement{Descriptor: l, PredicateType: pt})
		}
	}
	if opts.Statement {
		// No body is fetched for an answer over the bounds.
		for _, st := range out {
			l := st.Descriptor
			if l.Size > maxStatementSize {
				return fmt.Errorf("attestation statement %s is %d bytes, more than the %d wharfd reads%.0w", l.Digest, l.Size, maxStatementSize, ErrAttestationTooLarge)
			}
			if total += l.Size; total > maxStatementBytes {
				return fmt.Errorf("the attestation statements of %s are more than the %d bytes wharfd reads for one answer%.0w", subject, maxStatementBytes, ErrAttestationTooLarge)
			}
		}
	}
	for _, st := range out {
		if opts.Statement {
			l := st.Descriptor
			body, err := src.read(ctx, l, maxStatementSize)
			if err != nil {
				return fmt.Errorf("attestation statement %s: %w", l.Digest, err)
			}
			raw, err := statementJSON(body)
			if err != nil {
				return fmt.Errorf("attestation statement %s: %w", l.Digest, err)
			}
			st.Statement = &raw
		}
		if err := emit(st); err != nil {
			return err
		}
	}
	return nil
}

// ParseAttestationManifest reads an attestation manifest (outside input)
// and returns its layers: each with a valid digest and a size that is not
// negative, at most maxStatementsPerAttestation.
func ParseAttestationManifest(b []byte) ([]ocispec.Descriptor, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a manifest: %v%.0w", err, registry.ErrUpstream)
	}
	if m.MediaType != "" && !imagespec.IsManifest(m.MediaType) {
		return nil, fmt.Errorf("media type %q is not an image manifest%.0w", m.MediaType, registry.ErrUpstream)
	}
	if len(m.Layers) > maxStatementsPerAttestation {
		return nil, fmt.Errorf("%d layers, more than %d%.0w", len(m.Layers), maxStatementsPerAttestation, ErrAttestationTooLarge)
	}
	for _, l := range m.Layers {
		if err := store.ValidateDigest(l.Digest); err != nil {
			return nil, fmt.Errorf("layer: %v%.0w", err, registry.ErrUpstream)
		}
		if l.Size < 0 {
			return nil, fmt.Errorf("layer %s: size %d%.0w", l.Digest, l.Size, registry.ErrUpstream)
		}
	}
	return m.Layers, nil
}

// statementJSON is body as the Statement field: an in-toto statement is a
// JSON object, and it goes into the answer verbatim, so anything else
// would break the answer.
func statementJSON(body []byte) (json.RawMessage, error) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return nil, fmt.Errorf("not a JSON object%.0w", registry.ErrUpstream)
	}
	return json.RawMessage(t), nil
}

// verifyBlob checks b against desc: its size and its digest.
func verifyBlob(desc ocispec.Descriptor, b []byte) error {
	if int64(len(b)) != desc.Size {
		return fmt.Errorf("%s: %d bytes, the descriptor says %d%.0w", desc.Digest, len(b), desc.Size, registry.ErrUpstream)
	}
	if got := desc.Digest.Algorithm().FromBytes(b); got != desc.Digest {
		return fmt.Errorf("digest mismatch: %s has digest %s%.0w", desc.Digest, got, registry.ErrUpstream)
	}
	return nil
}

// localSource reads from the store, and what the store lacks from the
// repository the image came from (its repo digest at its top level).
type localSource struct {
	s     *Service
	rec   *store.ImageRecord
	creds registry.Credentials // bound once (originCredentials)

	remote    blobSource // resolved on first need
	remoteErr error
}

func (l *localSource) read(ctx context.Context, desc ocispec.Descriptor, max int64) ([]byte, error) {
	if err := store.ValidateDigest(desc.Digest); err != nil {
		return nil, fmt.Errorf("%v%.0w", err, registry.ErrUpstream)
	}
	if desc.Size > max {
		return nil, fmt.Errorf("%s is %d bytes, more than %d%.0w", desc.Digest, desc.Size, max, ErrAttestationTooLarge)
	}
	if l.s.st.HasBlob(desc.Digest) {
		b, err := l.s.st.ReadBlob(desc.Digest, max)
		if err != nil {
			return nil, err
		}
		return b, verifyBlob(desc, b)
	}
	if l.remote == nil && l.remoteErr == nil {
		l.remote, l.remoteErr = l.origin(ctx)
	}
	if l.remoteErr != nil {
		return nil, fmt.Errorf("%s is not stored locally, and %w", desc.Digest, l.remoteErr)
	}
	return l.remote.read(ctx, desc, max)
}

// origin is the repository a pull or push recorded for the image's top
// level (a repo digest naming it), tried in turn, each with l.creds:
// bound once to one registry (originCredentials), so a set the request
// sent without a server address never reaches a later origin.
func (l *localSource) origin(ctx context.Context) (blobSource, error) {
	if l.s.reg == nil {
		return nil, ErrNoRegistry
	}
	var lastErr error
	for _, c := range origins(l.rec) {
		res, err := l.s.reg.FindImage(ctx, imageref.FromNamed(c), l.creds)
		if err != nil {
			lastErr = err
			continue
		}
		return &remoteSource{repo: res.Repository()}, nil
	}
	if lastErr != nil {
		return nil, fmt.Errorf("its repository could not be read: %w", lastErr)
	}
	return nil, fmt.Errorf("the image names no repository to read it from%.0w", errdefs.ErrNotFound)
}

// origins are the repo digests of rec that pin its top level, in order.
func origins(rec *store.ImageRecord) []reference.Canonical {
	var out []reference.Canonical
	for _, rd := range rec.RepoDigests {
		ref, err := reference.ParseNormalizedNamed(rd)
		if err != nil {
			continue
		}
		if c, ok := ref.(reference.Canonical); ok && c.Digest() == rec.Target.Digest {
			out = append(out, c)
		}
	}
	return out
}

// originCredentials binds the request's credentials to one registry before
// any origin is asked: the registry of the name asked for when the image
// was pulled or pushed there, else its first origin's. One set without a
// server address (the Docker Go SDK's) goes there or nowhere.
func originCredentials(name string, rec *store.ImageRecord, c registry.Credentials) registry.Credentials {
	all := origins(rec)
	if len(all) == 0 {
		return c
	}
	index := reference.Domain(all[0])
	if n, err := reference.ParseNormalizedNamed(name); err == nil {
		for _, o := range all {
			if o.Name() == n.Name() {
				index = reference.Domain(n)
				break
			}
		}
	}
	return c.BoundTo(index)
}

// remoteSource reads from a repository: manifests through the registry
// client (capped at 4 MiB, verified, cached by digest), blobs streamed and
// capped here.
type remoteSource struct {
	repo *registry.Repository
}

func (r *remoteSource) read(ctx context.Context, desc ocispec.Descriptor, max int64) ([]byte, error) {
	if err := store.ValidateDigest(desc.Digest); err != nil {
		return nil, fmt.Errorf("%v%.0w", err, registry.ErrUpstream)
	}
	if desc.Size > max {
		return nil, fmt.Errorf("%s is %d bytes, more than %d%.0w", desc.Digest, desc.Size, max, ErrAttestationTooLarge)
	}
	if imagespec.IsKnownManifest(desc.MediaType) {
		b, err := r.repo.FetchManifest(ctx, desc)
		if err != nil {
			return nil, err
		}
		return b, verifyBlob(desc, b)
	}
	rc, err := r.repo.FetchBlob(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// Read into a buffer of the size the descriptor says (at most max,
	// checked above), not one grown by doubling: a 15 MiB statement held
	// 15 MiB, not up to 32. One byte more than that shows a longer blob.
	b := make([]byte, desc.Size)
	if _, err := io.ReadFull(rc, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: shorter than the %d bytes the descriptor says%.0w", desc.Digest, desc.Size, registry.ErrUpstream)
		}
		return nil, err
	}
	// Then the end: io.EOF once the client's reader has checked the
	// whole blob; its own error (a digest mismatch) otherwise.
	var one [1]byte
	switch n, err := io.ReadFull(rc, one[:]); {
	case n > 0:
		return nil, fmt.Errorf("%s: longer than the %d bytes the descriptor says%.0w", desc.Digest, desc.Size, registry.ErrUpstream)
	case err != io.EOF:
		return nil, err
	}
	return b, verifyBlob(desc, b)
}
