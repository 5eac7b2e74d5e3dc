package formatter

import (
	"fmt"
	"io"
	"strings"

	"github.com/wharfproject/wharf/api/types"
)

// TrustPolicy prints the daemon's signature policy as `wharf trust show`
// does without --json.
func TrustPolicy(out io.Writer, tp types.TrustPolicy) {
	if tp.Revision == "" {
		fmt.Fprintln(out, "No signature policy: every image is accepted (set wharfd --signature-policy, or /etc/wharf/policy.json).")
		return
	}
	fmt.Fprintf(out, "Policy: %s (%s)\n", tp.Path, tp.Revision)
	for _, s := range tp.Scopes {
		scope := s.Scope
		if scope == "" {
			scope = `"" (transports.docker default)`
		}
		fmt.Fprintln(out)
		if s.Reference != "" {
			fmt.Fprintf(out, "%s\n  scope: %s\n", s.Reference, scope)
		} else {
			fmt.Fprintf(out, "scope: %s\n", scope)
		}
		for _, r := range s.Requirements {
			fmt.Fprintf(out, "  requires: %s\n", r.Type)
			field := func(k, v string) {
				if v != "" {
					fmt.Fprintf(out, "    %s: %s\n", k, v)
				}
			}
			field("signedIdentity", r.Identity)
			field("subject", r.Subject)
			for _, k := range r.Keys {
				field("key", k.Source+" "+strings.Join(k.Fingerprints, ", "))
			}
			for _, k := range r.RekorKeys {
				field("rekor key", k.Source+" "+strings.Join(k.Fingerprints, ", "))
			}
			field("trustedIdentities", strings.Join(r.TrustedIdentities, "; "))
			field("level", r.Level)
			field("note", r.Note)
		}
		if len(s.IgnoredTransports) > 0 {
			fmt.Fprintf(out, "  ignored transports: %s\n", strings.Join(s.IgnoredTransports, ", "))
		}
	}
}
