package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/wharfproject/wharf/trust"
)

func TestEvaluateTransport(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, policy, transport string
		want                    trust.Decision
		scope, requirement, why string
	}{
		{"default rejects", `{"default":[{"type":"reject"}]}`, TransportDockerArchive,
			trust.Rejected, ScopeDefault, TypeReject, `is rejected by policy scope "default": reject`},
		{"docker's scopes do not apply", `{"default":[{"type":"reject"}],"transports":{"docker":{"":[{"type":"insecureAcceptAnything"}]}}}`, TransportOCIArchive,
			trust.Rejected, ScopeDefault, TypeReject, "reject"},
		{"transport default accepts", `{"default":[{"type":"reject"}],"transports":{"docker-archive":{"":[{"type":"insecureAcceptAnything"}]}}}`, TransportDockerArchive,
			trust.Accepted, ScopeTransportDefault, TypeInsecureAcceptAnything, `accepted by policy transport docker-archive scope ""`},
		{"the other archive transport does not", `{"default":[{"type":"reject"}],"transports":{"docker-archive":{"":[{"type":"insecureAcceptAnything"}]}}}`, TransportOCIArchive,
			trust.Rejected, ScopeDefault, TypeReject, "reject"},
		{"a path scope never matches a stream", `{"default":[{"type":"reject"}],"transports":{"oci-archive":{"/srv/a.tar":[{"type":"insecureAcceptAnything"}]}}}`, TransportOCIArchive,
			trust.Rejected, ScopeDefault, TypeReject, "reject"},
		{"transport default rejects", `{"default":[{"type":"insecureAcceptAnything"}],"transports":{"oci-archive":{"":[{"type":"reject"}]}}}`, TransportOCIArchive,
			trust.Rejected, ScopeTransportDefault, TypeReject, `rejected by policy transport oci-archive scope "": reject`},
		{"a signature is never found in an archive", `{"default":[{"type":"sigstoreSigned","keyData":"` + b64("A") + `"}]}`, TransportDockerArchive,
			trust.Rejected, ScopeDefault, TypeSigstoreSigned, "an archive carries no signature wharf reads"},
		{"notation audit does not enforce", `{"default":[{"type":"reject"}],"transports":{"oci-archive":{"":[{"type":"notationSigned","trustStore":{"caData":["` + b64("N") + `"]},"trustedIdentities":["*"],"signatureVerification":{"level":"audit"}}]}}}`, TransportOCIArchive,
			trust.Accepted, ScopeTransportDefault, TypeNotationSigned, "audit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, tc.policy, fakeOptions(nil))
			v := p.EvaluateTransport(ctx, tc.transport, trust.Image{})
			if v.Decision != tc.want || v.Scope != tc.scope || v.Requirement != tc.requirement || !strings.Contains(v.Reason, tc.why) || v.Revision != p.Revision() {
				t.Fatalf("verdict = %+v; want %s, scope %q, %s, reason with %q", v, tc.want, tc.scope, tc.requirement, tc.why)
			}
		})
	}
}

// The archive transports are applied, so they are no longer listed as
// ignored, and their requirements are built as docker's are (key files
// read, into the revision).
func TestArchiveTransportsApplied(t *testing.T) {
	p := mustParse(t, `{"default":[{"type":"reject"}],"transports":{"docker-archive":{"":[{"type":"insecureAcceptAnything"}]},"oci-archive":{"":[{"type":"reject"}]},"oci":{"":[{"type":"reject"}]}}}`, fakeOptions(nil))
	if got := strings.Join(p.IgnoredTransports(), ","); got != "oci" {
		t.Fatalf("IgnoredTransports = %s, want oci", got)
	}
}
