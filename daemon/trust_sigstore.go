package daemon

import (
	"github.com/wharfproject/wharf/trust/policy"
	"github.com/wharfproject/wharf/trust/sigstore"
)

// newSigstoreVerifier builds a sigstoreSigned requirement's verifier: the
// policy's trust roots, read from its files, as trust/sigstore takes them.
func newSigstoreVerifier(c policy.SigstoreConfig) (policy.Verifier, error) {
	cfg := sigstore.Config{Keys: c.Keys, RekorKeys: c.RekorKeys, Now: c.Now}
	if c.Fulcio != nil {
		cfg.Fulcio = &sigstore.Fulcio{CAPEM: c.Fulcio.CAPEM, OIDCIssuer: c.Fulcio.OIDCIssuer, SubjectEmail: c.Fulcio.SubjectEmail}
	}
	if c.PKI != nil {
		cfg.PKI = &sigstore.PKI{CARootsPEM: c.PKI.CARootsPEM, CAIntermediatesPEM: c.PKI.CAIntermediatesPEM,
			SubjectEmail: c.PKI.SubjectEmail, SubjectHostname: c.PKI.SubjectHostname}
	}
	return sigstore.New(cfg)
}
