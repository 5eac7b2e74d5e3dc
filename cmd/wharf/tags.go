package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
)

type tagsOptions struct {
	format   string
	limit    int
	sort     string
	pageSize int
}

// newTagsCommand is `wharf tags NAME`: the tags of a repository in its
// registry, as skopeo list-tags and crane ls print them.
func newTagsCommand(c *cli) *cobra.Command {
	var o tagsOptions
	cmd := &cobra.Command{
		Use:   "tags [OPTIONS] NAME",
		Short: "List the tags of a repository in its registry",
		Long: "List the tags of a repository in its registry, one a line, without pulling anything. " +
			"Short names are searched through the daemon's additional registries (add-registry) in order, " +
			"then docker.io, as a pull does; a tag or digest in NAME is ignored. By default the tags come in " +
			"the registry's order (the distribution registry sorts them lexically); --sort semver sorts them " +
			"semver-aware, ascending, with the tags that are not versions first, so the last line is the " +
			"highest version. --limit stops after N tags: in the registry's order without asking for further " +
			"pages; sorted, after sorting every tag.",
		Example: `  wharf tags alpine
  wharf tags --sort semver --limit 5 registry.example.com/team/app
  wharf tags --format json localhost:5000/app`,
		Args:              requiresExactArgs(1),
		ValidArgsFunction: completeImageNames(c, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTags(cmd.Context(), c, o, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.format, "format", "", "Output format: 'json' prints a JSON list; default one tag a line")
	fl.IntVar(&o.limit, "limit", 0, "Print at most N tags (0: all)")
	fl.StringVar(&o.sort, "sort", "registry", "Order: 'registry' (as the registry lists them) or 'semver'")
	fl.IntVar(&o.pageSize, "page-size", 0, "Tags the daemon asks the registry for per request (0: the daemon's default, 1000)")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("sort", cobra.FixedCompletions([]string{"registry", "semver"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runTags(ctx context.Context, c *cli, o tagsOptions, name string) error {
	opts := client.TagsOptions{Limit: o.limit, PageSize: o.pageSize}
	switch o.sort {
	case "registry", "":
	case "semver":
		opts.Sort = "semver"
	default:
		return fmt.Errorf("invalid --sort %q: want registry or semver", o.sort)
	}
	if o.format != "" && o.format != "json" {
		return fmt.Errorf("invalid --format %q: want json", o.format)
	}
	if o.limit < 0 || o.pageSize < 0 {
		return fmt.Errorf("--limit and --page-size must not be negative")
	}
	api, err := c.client()
	if err != nil {
		return err
	}
	// The stored credentials of each registry the daemon may find name
	// at, keyed by registry: each gets its own only.
	if opts.Registries, opts.Auth, err = c.creds().ForName(ctx, api, name); err != nil {
		return err
	}
	res, err := api.RemoteTags(ctx, name, opts)
	if err != nil {
		return err
	}
	if o.format == "json" {
		tags := res.Tags
		if tags == nil {
			tags = []string{}
		}
		b, err := json.Marshal(tags)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(c.out, string(b))
		return err
	}
	if len(res.Tags) == 0 {
		return nil
	}
	_, err = fmt.Fprintln(c.out, strings.Join(res.Tags, "\n"))
	return err
}
