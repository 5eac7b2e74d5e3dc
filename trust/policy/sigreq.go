package policy

import (
	"encoding/json"
	"strings"
)

// parseSigstore reads a sigstoreSigned requirement with containers/image's
// rules (signature/policy_config_sigstore.go): exactly one of keyPath,
// keyPaths, keyData, keyDatas, fulcio and pki; at most one Rekor key
// source, required with fulcio and refused with pki.
func (l *loader) parseSigstore(r *Requirement, data []byte) error {
	keys := newKeySources("key", true)
	rekor := newKeySources("rekorPublicKey", true)
	seen := map[string]bool{}
	var t string
	var fulcioRaw, pkiRaw, si json.RawMessage
	if err := object(r.Path, data, func(k string) any {
		switch k {
		case "type":
			return &t
		case "fulcio":
			seen[k] = true
			return &fulcioRaw
		case "pki":
			seen[k] = true
			return &pkiRaw
		case "signedIdentity":
			return &si
		}
		if dst := keys.field(k, seen); dst != nil {
			return dst
		}
		return rekor.field(k, seen)
	}); err != nil {
		return err
	}
	roots := keys.present(seen)
	for _, k := range []string{"fulcio", "pki"} {
		if seen[k] {
			roots = append(roots, k)
		}
	}
	if err := exactlyOne(r.Path, roots, "keyPath, keyPaths, keyData, keyDatas, fulcio and pki"); err != nil {
		return err
	}
	rk := rekor.present(seen)
	switch {
	case len(rk) > 1:
		return errAt(r.Path, ErrConflict, "at most one of rekorPublicKeyPath, rekorPublicKeyPaths, rekorPublicKeyData and rekorPublicKeyDatas may be present, %s are", strings.Join(rk, " and "))
	case seen["fulcio"] && len(rk) == 0:
		return errAt(r.Path, ErrMissing, "fulcio requires one of rekorPublicKeyPath, rekorPublicKeyPaths, rekorPublicKeyData and rekorPublicKeyDatas")
	case seen["pki"] && len(rk) > 0:
		return errAt(keyPath(r.Path, rk[0]), ErrConflict, "a Rekor key is not supported with pki")
	}
	id, err := identityFromJSON(keyPath(r.Path, "signedIdentity"), si)
	if err != nil {
		return err
	}
	s := &Sigstore{}
	switch roots[0] {
	case "fulcio":
		s.Fulcio, err = l.parseFulcio(keyPath(r.Path, "fulcio"), fulcioRaw)
	case "pki":
		s.PKI, err = l.parsePKI(keyPath(r.Path, "pki"), pkiRaw)
	default:
		s.Keys, err = l.loadSources(r.Path, keys, roots[0])
	}
	if err != nil {
		return err
	}
	if len(rk) == 1 {
		if s.RekorKeys, err = l.loadSources(r.Path, rekor, rk[0]); err != nil {
			return err
		}
	}
	r.SignedIdentity, r.Sigstore = id, s
	if l.syntaxOnly {
		return nil
	}
	if l.opts.NewSigstore == nil {
		return errAt(r.Path, ErrNoVerifier, "sigstoreSigned needs a Sigstore verifier and none is configured")
	}
	cfg := SigstoreConfig{RekorKeys: datas(s.RekorKeys), Now: l.opts.Now}
	switch {
	case s.Fulcio != nil:
		cfg.Fulcio = &FulcioConfig{CAPEM: s.Fulcio.CA.Data, OIDCIssuer: s.Fulcio.OIDCIssuer, SubjectEmail: s.Fulcio.SubjectEmail}
	case s.PKI != nil:
		cfg.PKI = &PKIConfig{CARootsPEM: s.PKI.CARoots.Data, SubjectEmail: s.PKI.SubjectEmail, SubjectHostname: s.PKI.SubjectHostname}
		if s.PKI.CAIntermediates != nil {
			cfg.PKI.CAIntermediatesPEM = s.PKI.CAIntermediates.Data
		}
	default:
		cfg.Keys = datas(s.Keys)
	}
	v, err := l.opts.NewSigstore(cfg)
	if err != nil {
		return errAt(r.Path, ErrInvalid, "sigstoreSigned: %v", err)
	}
	r.verifier = v
	return nil
}

func datas(srcs []Source) [][]byte {
	var out [][]byte
	for _, s := range srcs {
		out = append(out, s.Data)
	}
	return out
}

// pathOrData reads a "xPath"/"xData" pair of which at most one is present.
func (l *loader) pathOrData(path, name string, p *string, d *[]byte, seen map[string]bool, required bool) (*Source, error) {
	gp, gd := seen[name+"Path"], seen[name+"Data"]
	switch {
	case gp && gd:
		return nil, errAt(path, ErrConflict, "%sPath and %sData cannot both be present", name, name)
	case gp:
		s, err := l.readSource(keyPath(path, name+"Path"), *p)
		return &s, err
	case gd:
		if len(*d) == 0 {
			return nil, errAt(keyPath(path, name+"Data"), ErrInvalid, "%sData must not be empty", name)
		}
		return &Source{Data: *d}, nil
	case required:
		return nil, errAt(path, ErrMissing, "one of %sPath and %sData is required", name, name)
	}
	return nil, nil
}

func (l *loader) parseFulcio(path string, data []byte) (*Fulcio, error) {
	var caPath string
	var caData []byte
	f := &Fulcio{}
	seen := map[string]bool{}
	if err := object(path, data, func(k string) any {
		seen[k] = true
		switch k {
		case "caPath":
			return &caPath
		case "caData":
			return &caData
		case "oidcIssuer":
			return &f.OIDCIssuer
		case "subjectEmail":
			return &f.SubjectEmail
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if f.OIDCIssuer == "" {
		return nil, errAt(keyPath(path, "oidcIssuer"), ErrMissing, "fulcio requires oidcIssuer")
	}
	if f.SubjectEmail == "" {
		return nil, errAt(keyPath(path, "subjectEmail"), ErrMissing, "fulcio requires subjectEmail")
	}
	ca, err := l.pathOrData(path, "ca", &caPath, &caData, seen, true)
	if err != nil {
		return nil, err
	}
	f.CA = *ca
	return f, nil
}

func (l *loader) parsePKI(path string, data []byte) (*PKI, error) {
	var rootsPath, intPath string
	var rootsData, intData []byte
	p := &PKI{}
	seen := map[string]bool{}
	if err := object(path, data, func(k string) any {
		seen[k] = true
		switch k {
		case "caRootsPath":
			return &rootsPath
		case "caRootsData":
			return &rootsData
		case "caIntermediatesPath":
			return &intPath
		case "caIntermediatesData":
			return &intData
		case "subjectEmail":
			return &p.SubjectEmail
		case "subjectHostname":
			return &p.SubjectHostname
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if p.SubjectEmail == "" && p.SubjectHostname == "" {
		return nil, errAt(path, ErrMissing, "pki requires subjectEmail or subjectHostname")
	}
	roots, err := l.pathOrData(path, "caRoots", &rootsPath, &rootsData, seen, true)
	if err != nil {
		return nil, err
	}
	p.CARoots = *roots
	if p.CAIntermediates, err = l.pathOrData(path, "caIntermediates", &intPath, &intData, seen, false); err != nil {
		return nil, err
	}
	return p, nil
}
