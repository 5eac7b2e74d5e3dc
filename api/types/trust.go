package types

import "github.com/moby/moby/api/types/image"

// Trust is the signature policy's verdict on an image: on a
// remote inspect, what the policy decides for the digest the name resolves
// to now; on a local inspect, the verdict the image was pulled under.
type Trust struct {
	// Decision is "accepted", "rejected" or "no-policy".
	Decision string
	// Scope is the policy scope that applied: "docker.io/library/alpine",
	// "*.example.com", "" for transports.docker's own default, "default".
	Scope string `json:",omitempty"`
	// Requirement is the requirement type that decided
	// ("sigstoreSigned", "notationSigned", "reject", …).
	Requirement string `json:",omitempty"`
	// Reason says why, in a sentence naming the image and the scope.
	Reason string `json:",omitempty"`
	// PolicyRevision identifies the policy file (a digest of it and of the
	// keys it names).
	PolicyRevision string `json:",omitempty"`
	// Digest is the manifest digest the verdict is about.
	Digest string `json:",omitempty"`
	// Signatures are every signature looked at, verified or not.
	Signatures []TrustSignature `json:",omitempty"`
}

// TrustSignature is one signature: moby's SignatureIdentity (API 1.53,
// what Identity.Signature[] carries) and what wharf knows beyond it.
type TrustSignature struct {
	image.SignatureIdentity
	// Format is "sigstore-bundle", "cosign-simplesigning" or "notation".
	Format string
	// Artifact is the signature artifact's manifest digest.
	Artifact string
	// KeyFingerprint is "SHA256:<base64>" of the public key that verified.
	KeyFingerprint string `json:",omitempty"`
	// Verified says the signature is valid over the image's digest against
	// a trust root of the requirement that judged it.
	Verified bool
}

// Identity is moby's Identity (API 1.53) as wharf fills it from a
// verdict: every signature looked at, a failed one with only its Error,
// as moby shows them.
func (t *Trust) Identity() *image.Identity {
	if t == nil {
		return nil
	}
	var sigs []image.SignatureIdentity
	for _, s := range t.Signatures {
		if s.Verified || s.Error != "" {
			sigs = append(sigs, s.SignatureIdentity)
		}
	}
	if len(sigs) == 0 {
		return nil
	}
	return &image.Identity{Signature: sigs}
}

// TrustPolicy is GET /wharf/trust[?name=NAME] (`wharf trust show`): the
// scope that applies to NAME and what it requires, or every scope.
type TrustPolicy struct {
	// Path and Revision of the policy file; both empty without a policy.
	Path     string `json:",omitempty"`
	Revision string `json:",omitempty"`
	Scopes   []TrustScope
}

// TrustScope is one scope of the policy and its requirements.
type TrustScope struct {
	// Reference is the name looked up (with ?name=).
	Reference string `json:",omitempty"`
	// Scope: "docker.io/library/alpine", "*.example.com", "" (the
	// transport's default), "default".
	Scope string
	// NeedsSignatures is false when the scope decides without signatures.
	NeedsSignatures bool `json:",omitempty"`
	Requirements    []TrustRequirement
	// IgnoredTransports are the file's transports other than docker.
	IgnoredTransports []string `json:",omitempty"`
}

// TrustRequirement is one requirement of a scope.
type TrustRequirement struct {
	Type              string
	Identity          string         `json:",omitempty"`
	Keys              []TrustKeyInfo `json:",omitempty"`
	RekorKeys         []TrustKeyInfo `json:",omitempty"`
	Subject           string         `json:",omitempty"`
	TrustedIdentities []string       `json:",omitempty"`
	Level             string         `json:",omitempty"`
	Note              string         `json:",omitempty"`
}

// TrustKeyInfo is one trust root: its file (or inline key) and fingerprints.
type TrustKeyInfo struct {
	Source       string
	Fingerprints []string
}
