package policy

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"strconv"

	"github.com/distribution/reference"

	"github.com/wharfproject/wharf/api/types"
)

// Show describes the scope that applies to ref, as `wharf trust show NAME`
// prints it (in the spirit of `podman image trust show`): the wire type
// itself, so nothing copies it field by field.
func (p *Policy) Show(ref reference.Named) types.TrustScope {
	scope, reqs := p.For(ref)
	res := types.TrustScope{Scope: scope, NeedsSignatures: p.NeedsSignatures(ref), IgnoredTransports: p.ignored}
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
func (p *Policy) ShowAll() []types.TrustScope {
	var out []types.TrustScope
	for _, scope := range p.Scopes() {
		if scope == "" {
			continue
		}
		out = append(out, types.TrustScope{Scope: scope, Requirements: showRequirements(p.docker[scope])})
	}
	if reqs, ok := p.docker[""]; ok {
		out = append(out, types.TrustScope{Scope: "", Requirements: showRequirements(reqs)})
	}
	out = append(out, types.TrustScope{Scope: "default", Requirements: showRequirements(p.def), IgnoredTransports: p.ignored})
	return out
}

func showRequirements(reqs Requirements) []types.TrustRequirement {
	var out []types.TrustRequirement
	for _, r := range reqs {
		s := types.TrustRequirement{Type: r.Type}
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

func keyInfos(inline string, srcs []Source) []types.TrustKeyInfo {
	var out []types.TrustKeyInfo
	n := 0
	for _, s := range srcs {
		k := types.TrustKeyInfo{Source: s.Path}
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
