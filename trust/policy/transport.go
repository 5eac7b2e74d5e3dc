package policy

import (
	"context"
	"fmt"

	"github.com/wharfproject/wharf/trust"
)

// The archive transports, as containers-policy.json(5) names them: an
// image that arrives by docker load (a docker-save tar) and one that
// arrives in sync's OCI-layout archive import. containers/image applies
// the policy to every transport, falling back to the top-level default,
// so a policy whose default is reject refuses these too.
//
// containers/image keys these transports' scopes by the archive's file
// path. An archive streamed to wharfd has none, so only the transport's
// own "" scope applies; any other scope is parsed (and its files read) but
// never matches.
const (
	TransportDockerArchive = trust.TransportDockerArchive
	TransportOCIArchive    = trust.TransportOCIArchive
)

func archiveTransport(name string) bool {
	return name == TransportDockerArchive || name == TransportOCIArchive
}

// ForTransport returns the scope that applies to an image arriving by
// transport (TransportDockerArchive, TransportOCIArchive) and its
// requirements: the transport's "" scope when the policy has one, else
// the top-level default.
func (p *Policy) ForTransport(transport string) (scope string, reqs Requirements) {
	if r, ok := p.archives[transport]; ok && archiveTransport(transport) {
		return ScopeTransportDefault, r
	}
	return ScopeDefault, p.def
}

// EvaluateTransport judges an image arriving by transport (an archive)
// against the requirements of ForTransport, all of which must be
// satisfied. An archive carries no signature wharf reads, so a
// requirement for one is not satisfied (notationSigned at level skip or
// audit, which does not enforce, is). img names the image in the reason;
// its Reference may be nil.
func (p *Policy) EvaluateTransport(ctx context.Context, transport string, img trust.Image) trust.Verdict {
	scope, reqs := p.ForTransport(transport)
	v := trust.Verdict{Decision: trust.Rejected, Revision: p.revision, Scope: scope}
	where := fmt.Sprintf("policy scope %q", scope)
	if scope == ScopeTransportDefault {
		where = fmt.Sprintf("policy transport %s scope %q", transport, scope)
	}
	name := "an image arriving by " + transport
	if img.Reference != nil {
		name = img.Reference.String() + " (arriving by " + transport + ")"
	} else if img.Digest != "" {
		name = img.Digest.String() + " (arriving by " + transport + ")"
	}
	// No source: an archive carries no signature wharf reads.
	e := newEvaluation(ctx, img, nil)
	// The error is a signature walk's; with no source there is none.
	v, _ = e.decide(v, reqs, name, where, " (an archive carries no signature wharf reads)")
	return v
}
