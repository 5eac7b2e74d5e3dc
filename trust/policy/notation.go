package policy

import (
	"encoding/json"
	"strings"
)

// parseNotation reads wharf's notationSigned requirement (schema in
// doc.go), modelled on a notation trust policy statement: the statement's
// registryScopes are the policy scope it sits in, and its named trust
// stores are given inline as CA certificate files or data.
func (l *loader) parseNotation(r *Requirement, data []byte) error {
	var t string
	var storeRaw, verifRaw json.RawMessage
	var ids []string
	seen := map[string]bool{}
	if err := object(r.Path, data, func(k string) any {
		seen[k] = true
		switch k {
		case "type":
			return &t
		case "trustStore":
			return &storeRaw
		case "trustedIdentities":
			return &ids
		case "signatureVerification":
			return &verifRaw
		}
		return nil
	}); err != nil {
		return err
	}
	if !seen["signatureVerification"] {
		return errAt(keyPath(r.Path, "signatureVerification"), ErrMissing, "notationSigned requires signatureVerification")
	}
	var level string
	vpath := keyPath(r.Path, "signatureVerification")
	if err := object(vpath, verifRaw, func(k string) any {
		if k == "level" {
			return &level
		}
		return nil
	}); err != nil {
		return err
	}
	switch level {
	case LevelStrict, LevelPermissive, LevelAudit:
	case LevelSkip:
		// notation: a skip statement must not name trust stores or
		// identities (it verifies nothing).
		for _, k := range []string{"trustStore", "trustedIdentities"} {
			if seen[k] {
				return errAt(keyPath(r.Path, k), ErrConflict, "level skip takes no %s", k)
			}
		}
		r.Notation = &Notation{Level: level}
		return nil
	case "":
		return errAt(keyPath(vpath, "level"), ErrMissing, "level is required (strict, permissive, audit or skip)")
	default:
		return errAt(keyPath(vpath, "level"), ErrInvalid, "level %q is not strict, permissive, audit or skip", level)
	}
	n := &Notation{Level: level}
	if !seen["trustStore"] {
		return errAt(keyPath(r.Path, "trustStore"), ErrMissing, "notationSigned requires trustStore")
	}
	var err error
	if n.TrustStore, err = l.parseTrustStore(keyPath(r.Path, "trustStore"), storeRaw); err != nil {
		return err
	}
	ipath := keyPath(r.Path, "trustedIdentities")
	if len(ids) == 0 {
		return errAt(ipath, ErrMissing, "notationSigned requires a non-empty trustedIdentities")
	}
	for i, id := range ids {
		if err := validTrustedIdentity(id, len(ids)); err != "" {
			return errAt(indexPath(ipath, i), ErrInvalid, "%q: %s", id, err)
		}
	}
	n.TrustedIdentities = ids
	r.Notation = n
	if l.syntaxOnly {
		return nil
	}
	if l.opts.NewNotation == nil {
		return errAt(r.Path, ErrNoVerifier, "notationSigned needs a Notation verifier and none is configured")
	}
	v, err := l.opts.NewNotation(NotationConfig{TrustStore: datas(n.TrustStore), TrustedIdentities: ids, Level: level, Now: l.opts.Now})
	if err != nil {
		return errAt(r.Path, ErrInvalid, "notationSigned: %v", err)
	}
	r.verifier = v
	return nil
}

// validTrustedIdentity follows notation's trust policy: "*" alone, or
// "x509.subject: <distinguished name>".
func validTrustedIdentity(id string, n int) string {
	if id == "*" {
		if n != 1 {
			return "\"*\" must be the only trusted identity"
		}
		return ""
	}
	prefix, dn, ok := strings.Cut(id, ":")
	if !ok || strings.TrimSpace(prefix) != "x509.subject" {
		return "a trusted identity is \"*\" or \"x509.subject: <DN>\""
	}
	if strings.TrimSpace(dn) == "" {
		return "the distinguished name is empty"
	}
	return ""
}

func (l *loader) parseTrustStore(path string, data []byte) ([]Source, error) {
	var paths []string
	var blobs [][]byte
	if err := object(path, data, func(k string) any {
		switch k {
		case "caPaths":
			return &paths
		case "caData":
			return &blobs
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if len(paths) == 0 && len(blobs) == 0 {
		return nil, errAt(path, ErrMissing, "trustStore requires caPaths or caData")
	}
	var out []Source
	for i, p := range paths {
		s, err := l.readSource(indexPath(keyPath(path, "caPaths"), i), p)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	for i, b := range blobs {
		if len(b) == 0 {
			return nil, errAt(indexPath(keyPath(path, "caData"), i), ErrInvalid, "empty certificate data")
		}
		out = append(out, Source{Data: b})
	}
	return out, nil
}
