package daemon

import (
	"errors"

	"github.com/wharfproject/wharf/trust/policy"
)

// newSigstoreVerifier is filled when trust/sigstore lands.
func newSigstoreVerifier(policy.SigstoreConfig) (policy.Verifier, error) {
	return nil, errors.New("sigstoreSigned is not supported yet")
}
