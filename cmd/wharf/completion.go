package main

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
)

// completionTimeout bounds the daemon's answer to a TAB: a shell waits on
// it, and a local daemon lists its images in milliseconds.
const completionTimeout = 2 * time.Second

// completeImageNames completes the arguments of rmi, inspect, tag, push,
// save and history with the local image names (repository:tag), as
// docker's completion does; with limit > 0, only the first limit arguments.
// The names come from the daemon (wharf __complete is the binary itself,
// with the user's -H and $WHARF_HOST). Without a daemon it offers nothing
// and prints nothing: an error must never land in the user's command line.
func completeImageNames(c *cli, limit int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if limit > 0 && len(args) >= limit {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		api, err := c.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		images, err := api.ImageList(ctx, client.ImageListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		seen := map[string]bool{}
		var names []string
		for _, img := range images {
			for _, t := range img.RepoTags {
				if !seen[t] && strings.HasPrefix(t, toComplete) {
					seen[t] = true
					names = append(names, t)
				}
			}
		}
		sort.Strings(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
