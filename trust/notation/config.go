package notation

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	ldap "github.com/go-ldap/ldap/v3"
)

// Config is one notation trust policy statement, as wharf holds it: the
// statement's trust stores (by type), trustedIdentities and
// signatureVerification.level. See doc.go for the mapping.
type Config struct {
	// TrustStore is the statement's "ca" trust stores: PEM CA certificates
	// that verify signatures of signing scheme notary.x509.
	TrustStore [][]byte
	// SigningAuthority is the statement's "signingAuthority" trust stores:
	// PEM certificates that verify signatures of signing scheme
	// notary.x509.signingAuthority.
	SigningAuthority [][]byte
	// TrustedIdentities is "*" alone, or "x509.subject: <DN>" values: the
	// leaf's subject must contain every RDN of one of them.
	TrustedIdentities []string
	// Level is "strict", "permissive", "audit" or "skip".
	Level string
	// Now is the time of verification (time.Now when nil).
	Now func() time.Time
}

// action is what a level does with a failed check (notation's
// ValidationAction).
type action int

const (
	skip action = iota
	logged
	enforce
)

// The checks of notation's trust policy, in its names.
const (
	checkIntegrity          = "integrity"
	checkAuthenticity       = "authenticity"
	checkAuthenticTimestamp = "authenticTimestamp"
	checkExpiry             = "expiry"
	checkRevocation         = "revocation"
)

// levels is notation's verification level table (trust policy spec,
// "Signature Verification details"), verbatim.
var levels = map[string]map[string]action{
	"strict": {
		checkIntegrity: enforce, checkAuthenticity: enforce,
		checkAuthenticTimestamp: enforce, checkExpiry: enforce, checkRevocation: enforce,
	},
	"permissive": {
		checkIntegrity: enforce, checkAuthenticity: enforce,
		checkAuthenticTimestamp: logged, checkExpiry: logged, checkRevocation: logged,
	},
	"audit": {
		checkIntegrity: enforce, checkAuthenticity: logged,
		checkAuthenticTimestamp: logged, checkExpiry: logged, checkRevocation: logged,
	},
	"skip": {
		checkIntegrity: skip, checkAuthenticity: skip,
		checkAuthenticTimestamp: skip, checkExpiry: skip, checkRevocation: skip,
	},
}

// identity is one parsed x509.subject trusted identity: attribute type to
// value ("ST" for "S" too).
type identity map[string]string

// parseCertificates reads every CERTIFICATE block of each PEM entry. An
// entry with no certificate, another block type or trailing bytes is an
// error: a trust store that silently drops a root is worse than none.
func parseCertificates(kind string, entries [][]byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for i, entry := range entries {
		rest := entry
		n := 0
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				return nil, fmt.Errorf("notation: %s entry %d: PEM block %q is not a CERTIFICATE", kind, i, block.Type)
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("notation: %s entry %d: %w", kind, i, err)
			}
			certs = append(certs, cert)
			n++
		}
		if n == 0 || len(strings.TrimSpace(string(rest))) != 0 {
			return nil, fmt.Errorf("notation: %s entry %d is not PEM certificates", kind, i)
		}
	}
	return certs, nil
}

// parseIdentities follows notation's trust policy validation: "*" must be
// the only value; otherwise each is "x509.subject:<DN>" with an RFC 4514 DN
// that has single-valued, unique RDNs including C, ST (or S) and O, and no
// "=#" (hex-encoded) values. wildcard reports "*".
func parseIdentities(values []string) (ids []identity, wildcard bool, err error) {
	if len(values) == 0 {
		return nil, false, errors.New("notation: trustedIdentities is empty (use \"*\" to trust every identity the trust store issues)")
	}
	for _, v := range values {
		if v == "*" {
			if len(values) != 1 {
				return nil, false, errors.New("notation: trusted identity \"*\" must be the only value")
			}
			return nil, true, nil
		}
		prefix, dn, ok := strings.Cut(v, ":")
		if !ok || strings.TrimSpace(prefix) != "x509.subject" {
			return nil, false, fmt.Errorf("notation: trusted identity %q is not \"x509.subject: <DN>\"", v)
		}
		id, err := parseDN(strings.TrimSpace(dn), true)
		if err != nil {
			return nil, false, fmt.Errorf("notation: trusted identity %q: %w", v, err)
		}
		ids = append(ids, id)
	}
	return ids, false, nil
}

// parseDN is notation-go's internal/pkix.ParseDistinguishedName (same
// parser, same rules); mandatory asks for C, ST and O.
func parseDN(name string, mandatory bool) (identity, error) {
	if name == "" {
		return nil, errors.New("empty distinguished name")
	}
	if strings.Contains(name, "=#") {
		return nil, errors.New("distinguished names with \"=#\" (hex values) are not supported")
	}
	dn, err := ldap.ParseDN(name)
	if err != nil {
		return nil, fmt.Errorf("not an RFC 4514 distinguished name: %w", err)
	}
	id := identity{}
	for _, rdn := range dn.RDNs {
		if len(rdn.Attributes) > 1 {
			return nil, errors.New("multi-valued RDNs are not supported")
		}
		for _, a := range rdn.Attributes {
			t := a.Type
			if t == "S" {
				t = "ST"
			}
			if id[t] != "" {
				return nil, fmt.Errorf("duplicate RDN attribute %q", t)
			}
			id[t] = a.Value
		}
	}
	if mandatory {
		for _, t := range []string{"C", "ST", "O"} {
			if id[t] == "" {
				return nil, fmt.Errorf("no %s attribute (C, ST or S, and O are required)", t)
			}
		}
	}
	return id, nil
}

// within is notation's IsSubsetDN: every attribute of want is in have.
func (want identity) within(have identity) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
