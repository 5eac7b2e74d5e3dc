package diff

import (
	"slices"
	"strings"

	"github.com/wharfproject/wharf/api/types"
)

// Signer is the signer section from each side's verdict (nil: no policy
// judged it): the identities of the verified signatures, and whether they
// are the same. Same is set only when both sides have one: two unsigned
// images are not "signed by the same".
func Signer(a, b *types.Trust) *types.SignerDiff {
	d := &types.SignerDiff{From: a, To: b, FromIdentity: Identity(a), ToIdentity: Identity(b)}
	d.Same = d.FromIdentity != "" && d.FromIdentity == d.ToIdentity
	return d
}

// Identity names who signed: each verified signature's key fingerprint or
// its certificate's subject and issuer, sorted, joined by ", "; "" when no
// signature verified.
func Identity(t *types.Trust) string {
	if t == nil {
		return ""
	}
	var ids []string
	for _, s := range t.Signatures {
		if !s.Verified {
			continue
		}
		switch {
		case s.Signer != nil && s.Signer.SubjectAlternativeName != "":
			id := s.Signer.SubjectAlternativeName
			if s.Signer.CertificateIssuer != "" {
				id += " (" + s.Signer.CertificateIssuer + ")"
			}
			ids = append(ids, id)
		case s.KeyFingerprint != "":
			ids = append(ids, s.KeyFingerprint)
		}
	}
	slices.Sort(ids)
	return strings.Join(slices.Compact(ids), ", ")
}
