package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/cmd/wharf/internal/creds"
)

func newLogoutCommand(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "logout [SERVER]",
		Short: "Log out from a registry",
		Long:  "Remove the stored credentials of a registry (default docker.io) from the docker config or its credential helper. The daemon is not contacted.",
		Args:  requiresRangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server := "docker.io"
			if len(args) == 1 {
				server = args[0]
			}
			key := creds.ServerKey(server)
			store, err := c.creds().Open()
			if err != nil {
				return err
			}
			_, found, err := store.Get(cmd.Context(), key)
			if err != nil {
				return fmt.Errorf("error getting credentials for %s: %w", key, err)
			}
			if !found {
				fmt.Fprintf(c.out, "Not logged in to %s\n", key)
				return nil
			}
			fmt.Fprintf(c.out, "Removing login credentials for %s\n", key)
			if err := store.Delete(cmd.Context(), key); err != nil {
				return fmt.Errorf("error removing credentials for %s: %w", key, err)
			}
			return nil
		},
	}
}
