package policy

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The requirement types: containers-policy.json(5)'s, and wharf's
// notationSigned.
const (
	TypeInsecureAcceptAnything = "insecureAcceptAnything"
	TypeReject                 = "reject"
	TypeSignedBy               = "signedBy"
	TypeSigstoreSigned         = "sigstoreSigned"
	TypeNotationSigned         = "notationSigned"
)

// Notation verification levels (notation's trust policy).
const (
	LevelStrict     = "strict"
	LevelPermissive = "permissive"
	LevelAudit      = "audit"
	LevelSkip       = "skip"
)

// Requirements are one scope's requirements: all must be satisfied.
type Requirements []*Requirement

// Requirement is one parsed requirement object. Exactly one of SignedBy,
// Sigstore and Notation is set for the signature types.
type Requirement struct {
	Type string
	// Path is where the requirement is in the file
	// (`transports.docker."quay.io"[0]`).
	Path string
	// SignedIdentity applies to signedBy and sigstoreSigned.
	SignedIdentity Identity
	SignedBy       *SignedBy
	Sigstore       *Sigstore
	Notation       *Notation

	verifier Verifier
}

// Source is one trust root as the policy gave it: a file (Path) or inline
// base64 data (Path ""). Data is its bytes either way.
type Source struct {
	Path string
	Data []byte
}

// SignedBy is a GPG simple-signing requirement. It loads and validates but
// is never satisfied (see doc.go).
type SignedBy struct {
	KeyType string
	Keys    []Source
}

// Sigstore is a sigstoreSigned requirement's trust roots.
type Sigstore struct {
	Keys      []Source
	Fulcio    *Fulcio
	PKI       *PKI
	RekorKeys []Source
}

// Fulcio is sigstoreSigned's fulcio object.
type Fulcio struct {
	CA           Source
	OIDCIssuer   string
	SubjectEmail string
}

// PKI is sigstoreSigned's pki object.
type PKI struct {
	CARoots         Source
	CAIntermediates *Source
	SubjectEmail    string
	SubjectHostname string
}

// Notation is a notationSigned requirement.
type Notation struct {
	TrustStore        []Source
	TrustedIdentities []string
	Level             string
}

// signature reports whether the requirement needs signatures to decide.
func (r *Requirement) signature() bool {
	switch r.Type {
	case TypeInsecureAcceptAnything, TypeReject:
		return false
	case TypeNotationSigned:
		return r.Notation.Level != LevelSkip
	}
	return true
}

// parseRequirements reads one scope's array; it must not be empty.
func (l *loader) parseRequirements(path string, data []byte) (Requirements, error) {
	elems, err := array(path, data)
	if err != nil {
		return nil, err
	}
	if len(elems) == 0 {
		return nil, errAt(path, ErrInvalid, "a list of requirements must not be empty")
	}
	reqs := make(Requirements, 0, len(elems))
	for i, e := range elems {
		r, err := l.parseRequirement(indexPath(path, i), e)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

func (l *loader) parseRequirement(path string, data []byte) (*Requirement, error) {
	typ, err := typeOf(path, data)
	if err != nil {
		return nil, err
	}
	r := &Requirement{Type: typ, Path: path}
	switch typ {
	case TypeInsecureAcceptAnything, TypeReject:
		var t string
		err = object(path, data, func(k string) any {
			if k == "type" {
				return &t
			}
			return nil
		})
	case TypeSignedBy:
		err = l.parseSignedBy(r, data)
	case TypeSigstoreSigned:
		err = l.parseSigstore(r, data)
	case TypeNotationSigned:
		err = l.parseNotation(r, data)
	default:
		return nil, errAt(keyPath(path, "type"), ErrUnknownType, "unknown requirement type %q", typ)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// keySources collects the sources of a "<prefix>Path", "<prefix>Paths",
// "<prefix>Data" and (with withDatas) "<prefix>Datas" family of keys.
type keySources struct {
	path   *string
	paths  *[]string
	data   *[]byte
	datas  *[][]byte // nil when the family has no "Datas" key
	prefix string    // "key", "rekorPublicKey"
}

func newKeySources(prefix string, withDatas bool) keySources {
	ks := keySources{prefix: prefix, path: new(string), paths: new([]string), data: new([]byte)}
	if withDatas {
		ks.datas = new([][]byte)
	}
	return ks
}

// field returns where key goes if it is of this family.
func (ks keySources) field(key string, seen map[string]bool) any {
	var dst any
	switch strings.TrimPrefix(key, ks.prefix) {
	case "Path":
		dst = ks.path
	case "Paths":
		dst = ks.paths
	case "Data":
		dst = ks.data
	case "Datas":
		if ks.datas != nil {
			dst = ks.datas
		}
	}
	if dst == nil || !strings.HasPrefix(key, ks.prefix) {
		return nil
	}
	seen[key] = true
	return dst
}

// present lists which keys of the family appeared.
func (ks keySources) present(seen map[string]bool) []string {
	var got []string
	for _, s := range []string{"Path", "Paths", "Data", "Datas"} {
		if seen[ks.prefix+s] {
			got = append(got, ks.prefix+s)
		}
	}
	return got
}

// loadSources reads the family's one present key into sources.
func (l *loader) loadSources(path string, ks keySources, key string) ([]Source, error) {
	kp := keyPath(path, key)
	switch strings.TrimPrefix(key, ks.prefix) {
	case "Path":
		s, err := l.readSource(kp, *ks.path)
		return []Source{s}, err
	case "Paths":
		if len(*ks.paths) == 0 {
			return nil, errAt(kp, ErrInvalid, "%s must not be empty", key)
		}
		var out []Source
		for i, p := range *ks.paths {
			s, err := l.readSource(indexPath(kp, i), p)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	case "Data":
		if len(*ks.data) == 0 {
			return nil, errAt(kp, ErrInvalid, "%s must not be empty", key)
		}
		return []Source{{Data: *ks.data}}, nil
	case "Datas":
		if len(*ks.datas) == 0 {
			return nil, errAt(kp, ErrInvalid, "%s must not be empty", key)
		}
		var out []Source
		for i, d := range *ks.datas {
			if len(d) == 0 {
				return nil, errAt(indexPath(kp, i), ErrInvalid, "empty key data")
			}
			out = append(out, Source{Data: d})
		}
		return out, nil
	}
	return nil, fmt.Errorf("policy: internal error: key %q", key)
}

func (l *loader) parseSignedBy(r *Requirement, data []byte) error {
	ks := newKeySources("key", false)
	seen := map[string]bool{}
	var t, keyType string
	var si json.RawMessage
	if err := object(r.Path, data, func(k string) any {
		switch k {
		case "type":
			return &t
		case "keyType":
			seen[k] = true
			return &keyType
		case "signedIdentity":
			return &si
		}
		return ks.field(k, seen)
	}); err != nil {
		return err
	}
	// containers/image accepts four keyType values and implements only
	// GPGKeys (the others fail at evaluation); wharf rejects them at load.
	if keyType != "GPGKeys" {
		if !seen["keyType"] {
			return errAt(keyPath(r.Path, "keyType"), ErrMissing, "signedBy requires \"keyType\": \"GPGKeys\"")
		}
		return errAt(keyPath(r.Path, "keyType"), ErrInvalid, "keyType %q is not supported (only GPGKeys)", keyType)
	}
	got := ks.present(seen)
	if err := exactlyOne(r.Path, got, "keyPath, keyPaths and keyData"); err != nil {
		return err
	}
	id, err := identityFromJSON(keyPath(r.Path, "signedIdentity"), si)
	if err != nil {
		return err
	}
	keys, err := l.loadSources(r.Path, ks, got[0])
	if err != nil {
		return err
	}
	r.SignedIdentity, r.SignedBy = id, &SignedBy{KeyType: keyType, Keys: keys}
	return nil
}

// exactlyOne reports a family with none or more than one key present.
func exactlyOne(path string, got []string, family string) error {
	switch len(got) {
	case 1:
		return nil
	case 0:
		return errAt(path, ErrMissing, "exactly one of %s is required, none is present", family)
	}
	return errAt(path, ErrConflict, "exactly one of %s is required, %s are present", family, strings.Join(got, " and "))
}
