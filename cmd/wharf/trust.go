package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/api/types"
)

// newTrustCommand is `wharf trust`: the daemon's signature policy.
func newTrustCommand(c *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trust COMMAND",
		Short: "Show the daemon's signature policy",
	}
	cmd.AddCommand(newTrustShowCommand(c))
	return cmd
}

func newTrustShowCommand(c *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [OPTIONS] [NAME]",
		Short: "Show the signature policy: the scope and requirements that apply to NAME, or every scope",
		Long: "Show the daemon's signature policy (containers-policy.json(5), wharfd --signature-policy), as " +
			"`podman image trust show` does: for NAME, the scope that applies to it (the most specific of " +
			"host/repo:tag, host/repo, its namespaces, host, *.domain, the transport's default and the default) " +
			"and what that scope requires; without NAME, every scope.",
		Example: `  wharf trust show
  wharf trust show registry.example.com/team/app:1.4`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.client()
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			tp, err := api.TrustPolicy(cmd.Context(), name)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(c.out)
				enc.SetIndent("", "    ")
				return enc.Encode(tp)
			}
			printTrustPolicy(c.out, tp)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "Print the policy as JSON")
	return cmd
}

func printTrustPolicy(out io.Writer, tp types.TrustPolicy) {
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
