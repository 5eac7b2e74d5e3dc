package policy

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"strconv"

	"github.com/distribution/reference"
)

// ShowResult is what `wharf trust show NAME` prints, in the spirit of
// `podman image trust show`: the scope that applies and what it requires.
type ShowResult struct {
	Reference string // the normalised name looked up
	Scope     string // as in a Verdict ("default", "" for transports.docker's)
	Revision  string
	// NeedsSignatures is Policy.NeedsSignatures for the name.
	NeedsSignatures bool
	Requirements    []ShowRequirement
	// IgnoredTransports are the file's transports other than docker.
	IgnoredTransports []string
}

// ShowRequirement is one requirement of the scope.
type ShowRequirement struct {
	Type string
	// Identity is the signedIdentity (signedBy, sigstoreSigned).
	Identity string `json:",omitempty"`
	// Keys are the public keys, keyrings or CA certificates trusted.
	Keys []KeyInfo `json:",omitempty"`
	// RekorKeys are sigstoreSigned's Rekor public keys.
	RekorKeys []KeyInfo `json:",omitempty"`
	// Subject is the identity a certificate must carry (Fulcio: the OIDC
	// issuer and e-mail; PKI: e-mail and/or host name).
	Subject string `json:",omitempty"`
	// TrustedIdentities and Level are notationSigned's.
	TrustedIdentities []string `json:",omitempty"`
	Level             string   `json:",omitempty"`
	// Note says what wharf does differently (signedBy).
	Note string `json:",omitempty"`
}

// KeyInfo is one trust root: where it came from and a fingerprint of each
// PEM block in it.
type KeyInfo struct {
	Source string // an absolute path, or "keyData", "caData[1]", …
	// Fingerprints are "SHA256:<base64>" of each PEM block's DER (the
	// SubjectPublicKeyInfo of a public key, the whole certificate), or of
	// the bytes when they are not PEM (a GPG keyring).
	Fingerprints []string
}

// Show describes the scope that applies to ref.
func (p *Policy) Show(ref reference.Named) ShowResult {
	scope, reqs := p.For(ref)
	res := ShowResult{Scope: scope, Revision: p.revision, NeedsSignatures: p.NeedsSignatures(ref), IgnoredTransports: p.ignored}
	if ref != nil {
		res.Reference = identity(ref)
	}
	res.Requirements = showRequirements(reqs)
	return res
}

// ShowAll describes every scope, the most specific first as For tries
// them, then transports.docker's own default ("") and the top-level
// "default": `wharf trust show` without a name, as `podman image trust
// show` lists the whole policy.
func (p *Policy) ShowAll() []ShowResult {
	var out []ShowResult
	for _, scope := range p.Scopes() {
		if scope == "" {
			continue
		}
		out = append(out, ShowResult{Scope: scope, Revision: p.revision, Requirements: showRequirements(p.docker[scope])})
	}
	if reqs, ok := p.docker[""]; ok {
		out = append(out, ShowResult{Scope: "", Revision: p.revision, Requirements: showRequirements(reqs)})
	}
	out = append(out, ShowResult{Scope: "default", Revision: p.revision, Requirements: showRequirements(p.def), IgnoredTransports: p.ignored})
	return out
}

func showRequirements(reqs Requirements) []ShowRequirement {
	var out []ShowRequirement
	for _, r := range reqs {
		s := ShowRequirement{Type: r.Type}
		switch {
		case r.SignedBy != nil:
			s.Identity = r.SignedIdentity.String()
			s.Keys = keyInfos("keyData", r.SignedBy.Keys)
			s.Note = signedByReason
		case r.Sigstore != nil:
			s.Identity = r.SignedIdentity.String()
			st := r.Sigstore
			switch {
			case st.Fulcio != nil:
				s.Keys = keyInfos("fulcio.caData", []Source{st.Fulcio.CA})
				s.Subject = "oidcIssuer " + st.Fulcio.OIDCIssuer + ", subjectEmail " + st.Fulcio.SubjectEmail
			case st.PKI != nil:
				srcs := []Source{st.PKI.CARoots}
				if st.PKI.CAIntermediates != nil {
					srcs = append(srcs, *st.PKI.CAIntermediates)
				}
				s.Keys = keyInfos("pki.caData", srcs)
				s.Subject = pkiSubject(st.PKI)
			default:
				s.Keys = keyInfos("keyData", st.Keys)
			}
			s.RekorKeys = keyInfos("rekorPublicKeyData", st.RekorKeys)
		case r.Notation != nil:
			s.Keys = keyInfos("trustStore.caData", r.Notation.TrustStore)
			s.TrustedIdentities = r.Notation.TrustedIdentities
			s.Level = r.Notation.Level
		}
		out = append(out, s)
	}
	return out
}

func pkiSubject(p *PKI) string {
	var s string
	if p.SubjectEmail != "" {
		s = "subjectEmail " + p.SubjectEmail
	}
	if p.SubjectHostname != "" {
		if s != "" {
			s += ", "
		}
		s += "subjectHostname " + p.SubjectHostname
	}
	return s
}

func keyInfos(inline string, srcs []Source) []KeyInfo {
	var out []KeyInfo
	n := 0
	for _, s := range srcs {
		k := KeyInfo{Source: s.Path}
		if s.Path == "" {
			k.Source = inline
			if n > 0 {
				k.Source += "[" + strconv.Itoa(n) + "]"
			}
			n++
		}
		k.Fingerprints = Fingerprints(s.Data)
		out = append(out, k)
	}
	return out
}

// Fingerprints returns "SHA256:<base64>" of each PEM block's DER in data,
// or of data itself when it holds no PEM block.
func Fingerprints(data []byte) []string {
	var fps []string
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		fps = append(fps, fingerprint(b.Bytes))
	}
	if len(fps) == 0 && len(data) > 0 {
		fps = append(fps, fingerprint(data))
	}
	return fps
}

func fingerprint(b []byte) string {
	sum := sha256.Sum256(b)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// Scopes lists the transports.docker scopes the policy defines, sorted
// ("" is transports.docker's default), for `wharf trust show` without a
// name; Show(ref) then describes the one a name gets.
func (p *Policy) Scopes() []string { return sortedKeys(p.docker) }
