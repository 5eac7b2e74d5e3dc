package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	"github.com/wharfproject/wharf/trust"
)

// signedByReason is why a signedBy requirement is never satisfied.
const signedByReason = "signedBy (GPG simple signing) needs lookaside signature storage, which wharf does not read; use sigstoreSigned"

// formats are the artifact formats a requirement type judges.
func formats(typ string) []trust.Format {
	switch typ {
	case TypeSigstoreSigned:
		return []trust.Format{trust.FormatSigstoreBundle, trust.FormatSimpleSigning}
	case TypeNotationSigned:
		return []trust.Format{trust.FormatNotation}
	}
	return nil
}

// NeedsSignatures reports whether judging ref needs its signature
// artifacts: false when its scope decides without them (only
// insecureAcceptAnything, or a reject or signedBy that rejects whatever is
// found), so callers can skip fetching them.
func (p *Policy) NeedsSignatures(ref reference.Named) bool {
	_, reqs := p.For(ref)
	needs := false
	for _, r := range reqs {
		switch {
		case r.Type == TypeReject || r.Type == TypeSignedBy:
			return false
		case r.signature():
			needs = true
		}
	}
	return needs
}

// Evaluate judges img against the requirements of its scope; all must be
// satisfied (containers semantics), and the first that is not decides the
// rejection. src yields the signatures found for img.Digest, one at a
// time: each requirement walks it until one signature verifies (at
// Notation's audit level, to the end: all are reported), so an image
// signed once is accepted after one verification, whatever else its
// registry lists. The error is src's when a walk failed for any reason
// but trust.ErrSignatureLimit (the registry's: the verdict, a rejection,
// then says only that); the verdict then stands for nothing.
func (p *Policy) Evaluate(ctx context.Context, img trust.Image, src trust.Source) (trust.Verdict, error) {
	v := trust.Verdict{Decision: trust.Rejected, Revision: p.revision}
	if img.Reference == nil {
		v.Scope = ScopeDefault
		v.Reason = fmt.Sprintf("image %s has no reference to choose a policy scope by", img.Digest)
		return v, nil
	}
	scope, reqs := p.For(img.Reference)
	v.Scope = scope
	e := newEvaluation(ctx, img, src)
	return e.decide(v, reqs, describe(img), fmt.Sprintf("policy scope %q", scope), "")
}

// decide is the one loop every verdict comes from: all of reqs must be
// satisfied, the first that is not decides the rejection, and the most
// telling satisfied one (a signature over accept-anything) the
// acceptance. name and where word the reason; unsigned is appended to
// the reason of a signature requirement that was not met. The error is
// a failed signature walk's (e.err): the verdict then stands for nothing.
func (e *evaluation) decide(v trust.Verdict, reqs []*Requirement, name, where, unsigned string) (trust.Verdict, error) {
	var decisive *Requirement
	var why []string
	for _, r := range reqs {
		ok, reason := e.satisfy(r)
		if e.err != nil {
			return v, e.err
		}
		if !ok {
			if r.signature() {
				reason += unsigned
			}
			v.Requirement = r.Type
			v.Reason = fmt.Sprintf("%s is rejected by %s: %s: %s", name, where, r.Type, reason)
			v.Findings = e.findings
			return v, nil
		}
		if decisive == nil || (!decisive.signature() && r.signature()) {
			decisive = r
		}
		why = append(why, r.Type+": "+reason)
	}
	v.Decision = trust.Accepted
	v.Requirement = decisive.Type
	v.Reason = fmt.Sprintf("%s is accepted by %s: %s", name, where, strings.Join(why, "; "))
	v.Findings = e.findings
	return v, nil
}

func describe(img trust.Image) string {
	if _, ok := img.Reference.(reference.Digested); ok || img.Digest == "" {
		return img.Reference.String()
	}
	return fmt.Sprintf("%s (%s)", img.Reference.String(), img.Digest)
}

type evaluation struct {
	ctx      context.Context
	img      trust.Image
	ref      reference.Named // img.Reference, ":latest" added to a bare name
	src      trust.Source
	findings []trust.Finding
	seen     map[string]int // signature (Artifact.Key) → index in findings
	// mismatched are the signatures set aside for their subject.
	mismatched map[string]bool
	// err is a walk's failure other than trust.ErrSignatureLimit: the
	// look-up failed, and no verdict stands.
	err error
}

// newEvaluation is the one way an evaluation starts: every map made,
// a nil src read as no signatures, ref set when img names one.
func newEvaluation(ctx context.Context, img trust.Image, src trust.Source) *evaluation {
	if src == nil {
		src = trust.Artifacts(nil)
	}
	e := &evaluation{ctx: ctx, img: img, src: src, seen: map[string]int{}, mismatched: map[string]bool{}}
	if img.Reference != nil {
		e.ref = reference.TagNameOnly(img.Reference)
	}
	return e
}

// walk hands fn the signatures of src that sign img.Digest, each once;
// any other becomes a finding with an error and never reaches a verifier:
// a referrer naming another subject says nothing about this image,
// whatever it verifies.
func (e *evaluation) walk(fn func(trust.Artifact) bool) error {
	okDigest := e.img.Digest.Validate() == nil
	dup := map[string]bool{}
	return e.src.Each(e.ctx, func(a trust.Artifact) bool {
		if dup[a.Key()] {
			return true
		}
		dup[a.Key()] = true
		if !okDigest || a.Subject != e.img.Digest {
			e.mismatched[a.Key()] = true
			e.add(a.Key(), trust.Finding{
				Format:   a.Format,
				Artifact: a.Digest,
				Error:    fmt.Sprintf("referrer's subject is %s, not the image", subjectString(a.Subject)),
			})
			return true
		}
		return fn(a)
	})
}

func subjectString(d digest.Digest) string {
	if d == "" {
		return "empty"
	}
	return d.String()
}

// add records a finding, one per signature (key: trust.Artifact.Key): a
// verified finding replaces an unverified one of the same signature
// (another requirement's roots).
func (e *evaluation) add(key string, f trust.Finding) {
	if i, ok := e.seen[key]; ok {
		if f.Verified && !e.findings[i].Verified {
			e.findings[i] = f
		}
		return
	}
	e.seen[key] = len(e.findings)
	e.findings = append(e.findings, f)
}

// failuresShown is how many failed signatures a reason names (the
// findings carry them all).
const failuresShown = 3

// satisfy reports whether r is satisfied and a clause saying why (not).
func (e *evaluation) satisfy(r *Requirement) (bool, string) {
	switch r.Type {
	case TypeInsecureAcceptAnything:
		return true, "accepts any image"
	case TypeReject:
		return false, "the scope rejects every image"
	case TypeSignedBy:
		return false, signedByReason
	}
	audit := r.Type == TypeNotationSigned && r.Notation.Level == LevelAudit
	if r.Type == TypeNotationSigned && r.Notation.Level == LevelSkip {
		return true, "level skip verifies nothing"
	}
	if r.verifier == nil { // a Policy from Parse always has one
		return false, "no verifier is configured"
	}
	var first *trust.Finding
	var failed []string
	found, verified, failures := 0, 0, 0
	var stopped error
	err := e.walk(func(a trust.Artifact) bool {
		if !hasFormat(formats(r.Type), a.Format) {
			return true
		}
		found++
		if err := e.ctx.Err(); err != nil {
			stopped = err
			return false
		}
		f := e.judge(r, a)
		e.add(a.Key(), f)
		if f.Verified {
			verified++
			if first == nil {
				first = &f
			}
			// One verified signature satisfies r; audit reports all.
			return audit
		}
		failures++
		if len(failed) < failuresShown {
			failed = append(failed, fmt.Sprintf("%s: %s", short(a.Digest), f.Error))
		}
		return true
	})
	limit := ""
	switch {
	case errors.Is(err, trust.ErrSignatureLimit):
		limit = fmt.Sprintf("; the look-up stopped there: %v", err)
	case err != nil && e.ctx.Err() != nil:
		stopped = err
	case err != nil:
		e.err = err
		return false, err.Error()
	}
	if stopped != nil && first == nil {
		return false, fmt.Sprintf("verification stopped: %v", stopped)
	}
	if audit {
		return true, fmt.Sprintf("level audit records and does not enforce (%d of %d verified%s)", verified, found, limit)
	}
	switch {
	case first != nil:
		s := "signature " + short(first.Artifact) + " verified"
		if first.Name != "" {
			s += " (" + first.Name + ")"
		}
		return true, s
	case found == 0:
		return false, "no signature found" + e.mismatchNote() + limit
	}
	more := ""
	if failures > len(failed) {
		more = fmt.Sprintf("; and %d more", failures-len(failed))
	}
	return false, fmt.Sprintf("no signature verified (%d found: %s%s)%s%s", found, strings.Join(failed, "; "), more, e.mismatchNote(), limit)
}

// mismatchNote mentions referrers set aside for their subject.
func (e *evaluation) mismatchNote() string {
	if len(e.mismatched) == 0 {
		return ""
	}
	return fmt.Sprintf(", and %d referrer(s) for another subject were ignored", len(e.mismatched))
}

// judge verifies one artifact under r and applies r's signedIdentity.
func (e *evaluation) judge(r *Requirement, a trust.Artifact) trust.Finding {
	f := r.verifier.Verify(e.ctx, e.img, a)
	f.Artifact = a.Digest
	if f.Format == "" {
		f.Format = a.Format
	}
	if f.Error != "" {
		f.Verified = false
	}
	if !f.Verified {
		if f.Error == "" {
			f.Error = "not verified"
		}
		return f
	}
	// A signature that names a reference (legacy simple signing) must name
	// one signedIdentity accepts. One that names none (a bundle, Notation)
	// is bound to the image by its digest alone (doc.go).
	if r.Type == TypeSigstoreSigned && f.DockerReference != "" && !r.SignedIdentity.Matches(e.ref, f.DockerReference) {
		f.Verified = false
		f.Error = fmt.Sprintf("signature names %q, which signedIdentity %s does not accept for %s", f.DockerReference, r.SignedIdentity, e.ref)
	}
	return f
}

func hasFormat(fs []trust.Format, f trust.Format) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// short abbreviates a digest for a sentence.
func short(d digest.Digest) string {
	s := d.String()
	if i := strings.IndexByte(s, ':'); i >= 0 && len(s) > i+13 {
		return s[:i+13] + "…"
	}
	return s
}
