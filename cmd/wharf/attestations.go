package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
)

const defaultAttestationsFormat = "table {{.PredicateType}}\t{{.Digest}}\t{{.Size}}"

var attestationsHeaders = map[string]string{
	"PredicateType": "PREDICATE TYPE",
	"Digest":        "DIGEST",
	"Size":          "SIZE",
	"MediaType":     "MEDIA TYPE",
}

// attestationRow is one line of the `wharf attestations` table.
type attestationRow struct {
	PredicateType, Digest, Size, MediaType string
}

type attestationsOptions struct {
	platform  string
	types     []string
	statement bool
	remote    bool
	format    string
}

func newAttestationsCommand(c *cli) *cobra.Command {
	var o attestationsOptions
	cmd := &cobra.Command{
		Use:   "attestations [OPTIONS] IMAGE",
		Short: "List the in-toto attestations attached to an image",
		Long: "List the in-toto statements (SBOMs, provenance) that buildx attached to an image, " +
			"for one platform (API 1.55, GET /images/{name}/attestations). With --statement each " +
			"statement's body is printed (as JSON). With --remote the image is read from its registry " +
			"without pulling it.",
		Example: `  wharf attestations registry.example.com/team/app:1.4
  wharf attestations --platform linux/arm64 --type https://spdx.dev/Document --statement app:1.4
  wharf attestations --remote -f '{{.PredicateType}} {{.Descriptor.size}}' app:1.4`,
		Args:              requiresExactArgs(1),
		ValidArgsFunction: completeImageNames(c, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAttestations(cmd, c, args[0], o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.platform, "platform", "", "Platform whose attestations to list (os/arch[/variant]); default: the local image's own, or the daemon's")
	fl.StringArrayVar(&o.types, "type", nil, "Only statements of this in-toto predicate type (repeatable)")
	fl.BoolVar(&o.statement, "statement", false, "Print each statement's body (JSON output)")
	fl.BoolVarP(&o.remote, "remote", "r", false, "Read the attestations from the image's registry without pulling it")
	fl.StringVarP(&o.format, "format", "f", "", "Format output: 'table' (default without --statement), 'json' (default with it), or a Go template applied to each statement")
	return cmd
}

func runAttestations(cmd *cobra.Command, c *cli, name string, o attestationsOptions) error {
	platform, err := parsePlatform(o.platform)
	if err != nil {
		return err
	}
	api, err := c.client()
	if err != nil {
		return err
	}
	opts := client.AttestationsOptions{Platform: platform, PredicateTypes: o.types, Statement: o.statement, Remote: o.remote}
	// The stored credentials of each registry the daemon may find name at
	// (--remote) or read a local image's attestations from, keyed by
	// registry: each gets its own only.
	if opts.Registries, opts.Auth, err = c.creds().ForName(cmd.Context(), api, name); err != nil {
		return err
	}
	items, raw, err := api.ImageAttestations(cmd.Context(), name, opts)
	if err != nil {
		return err
	}
	format := o.format
	if format == "" {
		format = "table"
		if o.statement {
			format = "json"
		}
	}
	switch format {
	case "json":
		var elements []json.RawMessage
		if err := json.Unmarshal(raw, &elements); err != nil {
			return fmt.Errorf("decoding the daemon's answer: %w", err)
		}
		return formatter.JSONArray(c.out, elements)
	case "table":
		format = defaultAttestationsFormat
	}
	if !formatter.IsTable(format) {
		var elements []json.RawMessage
		if err := json.Unmarshal(raw, &elements); err != nil {
			return fmt.Errorf("decoding the daemon's answer: %w", err)
		}
		return formatter.Templated(c.out, format, elements)
	}
	w, err := formatter.NewRows(c.out, format, attestationsHeaders)
	if err != nil {
		return err
	}
	for _, it := range items {
		row := attestationRow{PredicateType: it.PredicateType, Digest: it.Descriptor.Digest.String(),
			Size: formatter.HumanSize(it.Descriptor.Size), MediaType: it.Descriptor.MediaType}
		if err := w.Write(row); err != nil {
			return err
		}
	}
	return w.Flush()
}
