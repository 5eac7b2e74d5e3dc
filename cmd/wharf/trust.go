package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
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
			formatter.TrustPolicy(c.out, tp)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "Print the policy as JSON")
	return cmd
}
