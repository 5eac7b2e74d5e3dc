package distribution

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/singleflight"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/registry"
	"github.com/wharfproject/wharf/trust"
)

// Judge is the signature policy as distribution uses it: trust/policy's
// Policy, installed by the daemon at start-up and on SIGHUP.
type Judge interface {
	// Revision identifies the policy file and the keys it names.
	Revision() string
	// NeedsSignatures is false when the scope of ref decides without
	// looking at signatures (insecureAcceptAnything, reject).
	NeedsSignatures(ref reference.Named) bool
	// Evaluate decides for img from the artifacts found for it, read
	// from src one at a time; an error is src's (the look-up failed).
	Evaluate(ctx context.Context, img trust.Image, src trust.Source) (trust.Verdict, error)
	// EvaluateTransport decides for an image arriving by an archive
	// transport (trust.TransportDockerArchive, trust.TransportOCIArchive).
	EvaluateTransport(ctx context.Context, transport string, img trust.Image) trust.Verdict
}

// How long a verdict is kept, by manifest digest, policy revision, the
// name asked and the credential scope the signatures were read under. An
// acceptance for 48 h, as moby keeps its signature identities: a digest's
// signatures do not go away. A rejection for 1 minute: the signature of an
// image pushed a moment ago may not be there yet, and an operator who just
// signed should not wait two days. 4,096 verdicts (a few KiB each).
const (
	acceptedVerdictTTL = 48 * time.Hour
	rejectedVerdictTTL = time.Minute
	maxVerdicts        = 4096
)

// verdicts holds the policy and its cached verdicts.
type verdicts struct {
	judge  atomic.Pointer[judgeBox]
	flight singleflight.Group

	mu    sync.Mutex
	cache *simplelru.LRU[string, cachedVerdict]
	// Verifications counts verdicts computed (not served from the cache):
	// the bench's "64 concurrent inspects run one verification".
	Verifications atomic.Int64
	// accepted, rejected, noPolicy count the computed verdicts by
	// decision (wharf_trust_verdicts_total{decision}).
	accepted, rejected, noPolicy atomic.Int64
}

type judgeBox struct{ j Judge }

type cachedVerdict struct {
	v       *types.Trust
	expires time.Time
}

func newVerdicts() *verdicts {
	c, _ := simplelru.NewLRU[string, cachedVerdict](maxVerdicts, nil)
	return &verdicts{cache: c}
}

// SetPolicy installs the signature policy (nil: none) and drops every
// cached verdict: a reload judges again.
func (s *Service) SetPolicy(j Judge) {
	if j == nil {
		s.verdicts.judge.Store(nil)
	} else {
		s.verdicts.judge.Store(&judgeBox{j})
	}
	s.verdicts.mu.Lock()
	s.verdicts.cache.Purge()
	s.verdicts.mu.Unlock()
}

// Verifications is the number of verdicts computed since start-up.
func (s *Service) Verifications() int64 { return s.verdicts.Verifications.Load() }

// Verdicts are the verdicts computed since start-up (not served from the
// cache), by decision.
func (s *Service) Verdicts() (accepted, rejected, noPolicy int64) {
	return s.verdicts.accepted.Load(), s.verdicts.rejected.Load(), s.verdicts.noPolicy.Load()
}

func (s *Service) policy() Judge {
	if b := s.verdicts.judge.Load(); b != nil {
		return b.j
	}
	return nil
}

// judgeRemote gives the policy's verdict on what name resolved to: the top
// level, and — for an index — the platform manifest chosen (cosign signs
// what it is given: a tag's index, or a platform's manifest). nil when no
// policy applies and force (verify=1) is false.
//
// The name judged is the one the user asked for (top.Name: the repository
// that answered the search, never the mirror that served it).
func (s *Service) judgeRemote(ctx context.Context, repo *registry.Repository, top registry.TopLevel, platform digest.Digest, force bool) (*types.Trust, error) {
	j := s.policy()
	if j == nil && !force {
		return nil, nil
	}
	ref := judgedReference(top)
	rev := ""
	if j != nil {
		rev = j.Revision()
	}
	key := strings.Join([]string{ref.String(), top.Descriptor.Digest.String(), platform.String(), rev, repo.CacheScope()}, "\x00")
	if v, ok := s.verdicts.get(key); ok {
		return v, nil
	}
	ch := s.verdicts.flight.DoChan(key, func() (any, error) {
		// A caller that missed the cache just before another flight
		// stored its verdict finds it here, instead of verifying again.
		if v, ok := s.verdicts.get(key); ok {
			return v, nil
		}
		// The verification outlives a caller that leaves: the others
		// sharing it still want the answer (bounded by the look-up's
		// own timeouts).
		fctx := context.WithoutCancel(ctx)
		v, err := s.judge(fctx, j, repo, ref, top.Descriptor.Digest, platform)
		if err != nil {
			return nil, err
		}
		s.verdicts.Verifications.Add(1)
		s.verdicts.count(v.Decision)
		s.verdicts.put(key, v)
		return v, nil
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*types.Trust), nil
	}
}

// judgedReference is the reference a verdict is about: the repository
// with the tag resolved, or with the digest when the name was one.
func judgedReference(top registry.TopLevel) reference.Named {
	if top.Tag != "" {
		if t, err := reference.WithTag(top.Name, top.Tag); err == nil {
			return t
		}
	}
	if d, err := reference.WithDigest(top.Name, top.Descriptor.Digest); err == nil {
		return d
	}
	return top.Name
}

// judge fetches the signatures and evaluates: the top level first; when
// it is rejected and a platform manifest was chosen, that manifest.
func (s *Service) judge(ctx context.Context, j Judge, repo *registry.Repository, ref reference.Named, top, platform digest.Digest) (*types.Trust, error) {
	if j != nil && !j.NeedsSignatures(ref) {
		v, err := j.Evaluate(ctx, trust.Image{Reference: ref, Digest: top}, nil)
		if err != nil {
			return nil, err
		}
		return trustAnswer(v, top), nil
	}
	subjects := []digest.Digest{top}
	if platform != "" && platform != top {
		subjects = append(subjects, platform)
	}
	var first *types.Trust
	for _, d := range subjects {
		set, err := repo.Signatures(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("reading the signatures of %s: %w", d, err)
		}
		img := trust.Image{Reference: ref, Digest: d}
		if j == nil {
			return unjudged(ctx, img, set)
		}
		verdict, err := j.Evaluate(ctx, img, set)
		if err != nil {
			return nil, fmt.Errorf("reading the signatures of %s: %w", d, err)
		}
		v := trustAnswer(verdict, d)
		if v.Decision == string(trust.Accepted) {
			return v, nil
		}
		if first == nil {
			first = v
		} else {
			first.Signatures = append(first.Signatures, v.Signatures...)
		}
	}
	return first, nil
}

// unjudged is verify=1 without a policy: the signatures found, none
// verified, for nothing names a trust root to verify them against. They
// are read under the same caps as for a policy; past them the answer
// lists what was read and says so.
func unjudged(ctx context.Context, img trust.Image, src trust.Source) (*types.Trust, error) {
	t := &types.Trust{Decision: string(trust.NoPolicy), Digest: img.Digest.String()}
	err := src.Each(ctx, func(a trust.Artifact) bool {
		t.Signatures = append(t.Signatures, types.TrustSignature{
			SignatureIdentity: image.SignatureIdentity{SignatureType: signatureType(a.Format), Warnings: []string{"not verified: no signature policy"}},
			Format:            string(a.Format), Artifact: a.Digest.String(),
		})
		return true
	})
	more := ""
	switch {
	case errors.Is(err, trust.ErrSignatureLimit):
		more = fmt.Sprintf(" (the look-up stopped there: %v)", err)
	case err != nil:
		return nil, fmt.Errorf("reading the signatures of %s: %w", img.Digest, err)
	}
	t.Reason = fmt.Sprintf("no signature policy: %d signatures found for %s%s, none verified (a policy names the keys and roots to verify against)", len(t.Signatures), img.Digest, more)
	return t, nil
}

func signatureType(f trust.Format) image.SignatureType {
	switch f {
	case trust.FormatSigstoreBundle:
		return "bundle-v0.3"
	case trust.FormatSimpleSigning:
		return "hashedrecord"
	}
	return image.SignatureType(f)
}

// trustAnswer is a verdict in the API's shape.
func trustAnswer(v trust.Verdict, d digest.Digest) *types.Trust {
	t := &types.Trust{Decision: string(v.Decision), Scope: v.Scope, Requirement: v.Requirement, Reason: v.Reason,
		PolicyRevision: v.Revision, Digest: d.String()}
	for _, f := range v.Findings {
		si := image.SignatureIdentity{Name: f.Name, SignatureType: image.SignatureType(f.SignatureType),
			DockerReference: f.DockerReference, Error: f.Error, Warnings: f.Warnings}
		if f.Signer != nil {
			si.Signer = &image.SignerIdentity{CertificateIssuer: f.Signer.CertificateIssuer,
				SubjectAlternativeName: f.Signer.SubjectAlternativeName, Issuer: f.Signer.Issuer}
		}
		for _, ts := range f.Timestamps {
			si.Timestamps = append(si.Timestamps, image.SignatureTimestamp{Type: image.SignatureTimestampType(ts.Type), URI: ts.URI, Timestamp: ts.Timestamp})
		}
		t.Signatures = append(t.Signatures, types.TrustSignature{SignatureIdentity: si, Format: string(f.Format),
			Artifact: f.Artifact.String(), KeyFingerprint: f.KeyFingerprint, Verified: f.Verified})
	}
	return t
}

func (v *verdicts) get(key string) (*types.Trust, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.cache.Get(key)
	if !ok || time.Now().After(c.expires) {
		return nil, false
	}
	return c.v, true
}

// count adds a computed verdict to its decision's counter.
func (v *verdicts) count(decision string) {
	switch trust.Decision(decision) {
	case trust.Accepted:
		v.accepted.Add(1)
	case trust.Rejected:
		v.rejected.Add(1)
	case trust.NoPolicy:
		v.noPolicy.Add(1)
	}
}

func (v *verdicts) put(key string, t *types.Trust) {
	ttl := rejectedVerdictTTL
	if t.Decision == string(trust.Accepted) {
		ttl = acceptedVerdictTTL
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cache.Add(key, cachedVerdict{v: t, expires: time.Now().Add(ttl)})
}

// errRejected is a refusal by the signature policy: a pull or a copy of
// an image it rejects (403, the same words through every client).
func errRejected(op string, t *types.Trust) error {
	return fmt.Errorf("%s refused by the signature policy: %s%.0w", op, t.Reason, errdefs.ErrPermissionDenied)
}

// judgeRemoteImage is the verdict on a remote inspect's answer: under a policy,
// or with verify. A rejected image still inspects; the answer says why.
//
// The signatures are read through the repository the answer was read
// through (ri.Repository), with the credentials the search bound to it:
// a short name found at a later candidate is asked anonymously for its
// signatures as it was for the image. It takes no credentials, so none
// can be bound again to whichever registry answered.
func (s *Service) judgeRemoteImage(ctx context.Context, ri *registry.RemoteImage, verify bool) (*types.Trust, error) {
	if ri.V1 || (s.policy() == nil && !verify) {
		return nil, nil
	}
	repo := ri.Repository()
	if repo == nil {
		return nil, fmt.Errorf("judging %s: the answer names no repository it was read through%.0w", ri.Descriptor.Digest, errdefs.ErrInvalidArgument)
	}
	return s.judgeRemote(ctx, repo, ri.TopLevel, ri.Manifest.Digest, verify)
}

// admit is the policy's check before a pull or a copy moves a byte: the
// verdict on res (and the platform manifest chosen from an index), an
// error naming the image, the scope and the reason when it is rejected,
// and an event. nil, nil without a policy.
func (s *Service) admit(ctx context.Context, op string, res *registry.Resolved, platformDigest digest.Digest) (*types.Trust, error) {
	if s.policy() == nil || res.V1() {
		return nil, nil
	}
	t, err := s.judgeRemote(ctx, res.Repository(), res.TopLevel, platformDigest, false)
	if err != nil {
		return nil, err
	}
	if t != nil && t.Decision == string(trust.Rejected) {
		name := reference.FamiliarString(res.Ref())
		store.Emit(ctx, s.events, store.Event{Actor: name, Action: "refused", Attrs: map[string]string{
			"name": name, "operation": op, "digest": t.Digest, "scope": t.Scope, "requirement": t.Requirement, "reason": t.Reason,
		}})
		return t, errRejected(op+" of "+name, t)
	}
	return t, nil
}

// judgeDestination is the verdict at a copy's DST after the signatures
// travelled, under DST's scope, as a status line and in the result.
func (s *Service) judgeDestination(ctx context.Context, dstRepo *registry.Repository, dst reference.Named, tag string, d digest.Digest, po *progressOutput, result *types.CopyResult) error {
	if s.policy() == nil {
		return nil
	}
	top := registry.TopLevel{Registry: dstRepo.Info().Index.Name, Name: reference.TrimNamed(dst), Tag: tag, Descriptor: ocispec.Descriptor{Digest: d}}
	t, err := s.judgeRemote(ctx, dstRepo, top, "", false)
	if err != nil {
		return fmt.Errorf("the image and its referrers were copied to %s, but judging them there failed: %w", dst, err)
	}
	result.DestinationTrust = t
	return po.status("", fmt.Sprintf("Signature policy at %s: %s (scope %q, %s)", reference.FamiliarName(dst), t.Decision, t.Scope, t.Requirement))
}

// JudgeTag is the policy's verdict on what ref's tag names now (the
// update check): nil without a policy. It reads the signatures through
// the repository LookupRemoteTag asked (remote.Repository), under the
// credentials bound there.
func (s *Service) JudgeTag(ctx context.Context, ref reference.NamedTagged, remote RemoteTag, platform digest.Digest) (*types.Trust, error) {
	if s.policy() == nil {
		return nil, nil
	}
	repo := remote.Repository()
	if repo == nil {
		return nil, fmt.Errorf("judging %s: the answer names no repository it was read through%.0w", ref, errdefs.ErrInvalidArgument)
	}
	tl := registry.TopLevel{Registry: repo.Info().Index.Name, Name: reference.TrimNamed(ref), Tag: ref.Tag(), Descriptor: remote.Descriptor}
	return s.judgeRemote(ctx, repo, tl, platform, false)
}
