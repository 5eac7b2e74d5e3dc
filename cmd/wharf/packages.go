package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/client"
)

// packagesFormats are --format's values: syft's names.
var packagesFormats = []string{"table", "json", "cyclonedx-json", "spdx-json"}

type packagesOptions struct {
	format string
	contentsFlags
}

// newPackagesCommand is `wharf packages IMAGE`: the packages of an image,
// read from its package databases and binaries through the layer index.
func newPackagesCommand(c *cli) *cobra.Command {
	var o packagesOptions
	cmd := &cobra.Command{
		Use:   "packages [OPTIONS] IMAGE",
		Short: "List the packages of an image without pulling or running it",
		Long: "List the packages installed in an image: dpkg, apk and rpm databases and the build " +
			"information of Go binaries, read through the image's layer index (with --remote, " +
			"without pulling it). --format takes syft's names: table (NAME VERSION TYPE), json " +
			"(the daemon's answer), cyclonedx-json and spdx-json, which grype and trivy read.",
		Example: `  wharf packages debian:12
  wharf packages --remote registry.example.com/team/app:1.4
  wharf packages --remote --format cyclonedx-json app:1.4 > app.cdx.json`,
		Args:              requiresRangeArgs(1, 1),
		ValidArgsFunction: completeImageNames(c, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPackages(cmd.Context(), c, o, args[0])
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "table", "Output format: table, json, cyclonedx-json or spdx-json")
	o.contentsFlags.add(cmd)
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(packagesFormats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runPackages(ctx context.Context, c *cli, o packagesOptions, name string) error {
	switch o.format {
	case "", "table", "json", "cyclonedx-json", "spdx-json":
	default:
		return fmt.Errorf("invalid --format %q: want one of table, json, cyclonedx-json, spdx-json", o.format)
	}
	api, err := c.client()
	if err != nil {
		return err
	}
	fo, err := o.options(ctx, c, api, name, "/")
	if err != nil {
		return err
	}
	popts := client.PackagesOptions{Remote: fo.Remote, Platform: fo.Platform, Auth: fo.Auth, Registries: fo.Registries}
	if o.format == "cyclonedx-json" || o.format == "spdx-json" {
		// The daemon writes the document (internal/sbom).
		rc, err := api.ImagePackagesDocument(ctx, name, popts, o.format)
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.Copy(c.out, rc)
		return err
	}
	pkgs, err := api.ImagePackages(ctx, name, popts)
	if err != nil {
		return err
	}
	if o.format == "json" {
		enc := json.NewEncoder(c.out)
		enc.SetIndent("", "  ")
		return enc.Encode(pkgs)
	}
	return packagesTable(c.out, pkgs.Packages)
}

// packagesTable is syft's table: NAME VERSION TYPE, a line a package,
// sorted by name, version, then type.
func packagesTable(w io.Writer, pkgs []types.Package) error {
	if len(pkgs) == 0 {
		_, err := fmt.Fprintln(w, "No packages discovered")
		return err
	}
	rows := slices.Clone(pkgs)
	slices.SortStableFunc(rows, func(a, b types.Package) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Type, b.Type))
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tTYPE")
	for _, p := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, p.Version, p.Type)
	}
	return tw.Flush()
}
