package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
	"github.com/wharfproject/wharf/imagespec"
)

type inspectOptions struct {
	format   string
	kind     string
	remote   bool
	platform string
	raw      bool

	referrers    bool
	artifactType string
	verify       bool
}

func newInspectCommand(c *cli) *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect [OPTIONS] NAME|ID [NAME|ID...]",
		Short: "Return low-level information on images (local or in a registry)",
		Long: "Return low-level information on images. By default the local store is searched " +
			"(containers first, as docker does; wharfd has none). With --remote the image is " +
			"inspected in its registry without pulling it: short names are searched through " +
			"the daemon's additional registries (add-registry) in order, then docker.io.",
		Example: `  wharf inspect alpine:3.20
  wharf inspect --remote registry.example.com/team/app:1.4
  wharf inspect -r --platform linux/arm64/v8 -f '{{.Digest}} {{.Architecture}}' alpine
  wharf inspect --remote --raw alpine:3.20
  wharf inspect --remote --referrers -f '{{range .Referrers}}{{.Source}} {{.ArtifactType}} {{.Digest}}{{"\n"}}{{end}}' app:1.4`,
		Args:              requiresMinArgs(1),
		ValidArgsFunction: completeImageNames(c, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInspect(cmd.Context(), c, o, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.format, "format", "f", "", "Format output using a custom template:\n'json':             Print in JSON format\n'TEMPLATE':         Print output using the given Go template")
	fl.StringVar(&o.kind, "type", "", "Only inspect objects of the given type (image or container)")
	fl.BoolVarP(&o.remote, "remote", "r", false, "Inspect the image in its registry without pulling it (implies --type=image)")
	fl.StringVar(&o.platform, "platform", "", "Platform to inspect in a multi-platform image (os/arch[/variant])")
	fl.BoolVar(&o.raw, "raw", false, "Print the manifest exactly as the registry serves it (requires --remote)")
	fl.BoolVar(&o.referrers, "referrers", false, "Add the Referrers list: signatures, SBOMs and attestations that refer to the image (requires --remote)")
	fl.StringVar(&o.artifactType, "artifact-type", "", "With --referrers, only referrers of this artifact type")
	fl.BoolVar(&o.verify, "verify", false, "Verify the image's signatures even without a signature policy (requires --remote; under a policy every remote inspect verifies)")
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"image", "container"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("platform", cobra.FixedCompletions([]string{
		"linux/amd64", "linux/arm64", "linux/arm64/v8", "linux/arm/v7", "linux/arm/v6",
		"linux/386", "linux/ppc64le", "linux/s390x", "linux/riscv64", "windows/amd64",
	}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runInspect(ctx context.Context, c *cli, o inspectOptions, names []string) error {
	switch o.kind {
	case "", "image", "container":
	default:
		return fmt.Errorf("%q is not a valid value for --type", o.kind)
	}
	if o.remote && o.kind == "container" {
		return errors.New("conflicting options: --remote && --type=container")
	}
	if o.raw && !o.remote {
		return errors.New("--raw requires --remote")
	}
	if o.raw && o.format != "" {
		return errors.New("conflicting options: --raw && --format")
	}
	if o.referrers && !o.remote {
		return errors.New("--referrers requires --remote")
	}
	if o.referrers && o.raw {
		return errors.New("conflicting options: --raw && --referrers")
	}
	if o.verify && !o.remote {
		return errors.New("--verify requires --remote")
	}
	if o.artifactType != "" && !o.referrers {
		return errors.New("--artifact-type requires --referrers")
	}
	platform, err := parsePlatform(o.platform)
	if err != nil {
		return err
	}
	api, err := c.client()
	if err != nil {
		return err
	}
	opts := client.InspectOptions{Platform: platform, Referrers: o.referrers, ArtifactType: o.artifactType, Verify: o.verify}

	var found []json.RawMessage
	var failures []string
	for _, name := range names {
		var raw []byte
		var err error
		switch {
		case o.raw:
			raw, err = inspectRawManifest(ctx, c, api, name, opts)
			if err == nil {
				// The manifest is printed byte for byte as served.
				if _, werr := c.out.Write(raw); werr != nil {
					return werr
				}
				continue
			}
		case o.remote:
			raw, err = inspectRemote(ctx, c, api, name, opts)
		default:
			raw, err = inspectLocal(ctx, api, name, o.kind, opts)
		}
		if errors.Is(err, client.ErrConnectionFailed) {
			// No daemon: no "[]", no line per name, just why.
			return err
		}
		if err != nil {
			failures = append(failures, inspectFailure(err, name, o))
			continue
		}
		found = append(found, raw)
	}
	if !o.raw {
		var werr error
		if o.format == "" || o.format == "json" {
			werr = formatter.JSONArray(c.out, found)
		} else {
			werr = formatter.Templated(c.out, o.format, found)
		}
		if werr != nil {
			return &statusError{status: 1, message: werr.Error()}
		}
	}
	if len(failures) > 0 {
		return &statusError{status: 1, message: strings.Join(failures, "\n")}
	}
	return nil
}

// inspectFailure is the stderr line for a name that could not be inspected.
// A plain "No such image/container" 404 becomes docker's short line naming
// what was typed; any other 404 (no such platform in an index, a v1-only
// registry) keeps the daemon's message, which says why.
func inspectFailure(err error, name string, o inspectOptions) string {
	var de *client.Error
	if !errors.As(err, &de) || de.StatusCode != http.StatusNotFound ||
		!strings.HasPrefix(strings.ToLower(de.Message), "no such ") {
		return err.Error()
	}
	switch {
	case o.remote, o.kind == "image":
		return "Error: " + types.NoSuchImage(name).Error()
	case o.kind == "container":
		return "Error: No such container: " + name
	}
	return "Error: No such image or container: " + name
}

// inspectLocal looks name up as a container (generic inspect only, as docker
// does; wharfd answers 404) and then as a local image.
func inspectLocal(ctx context.Context, api *client.Client, name, kind string, opts client.InspectOptions) ([]byte, error) {
	if kind == "" || kind == "container" {
		raw, err := api.ContainerInspect(ctx, name)
		if err == nil {
			return raw, nil
		}
		if kind == "container" || !client.IsNotFound(err) {
			return nil, err
		}
	}
	_, raw, err := api.ImageInspect(ctx, name, opts)
	return raw, err
}

// inspectRemote inspects name in its registry, sending the stored
// credentials of each registry the daemon may find it at, keyed by
// registry (creds.Finder.ForName): each gets its own only.
func inspectRemote(ctx context.Context, c *cli, api *client.Client, name string, opts client.InspectOptions) ([]byte, error) {
	var err error
	if opts.Registries, opts.Auth, err = c.creds().ForName(ctx, api, name); err != nil {
		return nil, err
	}
	v, raw, err := api.ImageInspectRemote(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	c.log.Debugf("Inspecting image %s", describeRemote(name, v.Registry, v.Tag, v.Digest))
	return raw, nil
}

func inspectRawManifest(ctx context.Context, c *cli, api *client.Client, name string, opts client.InspectOptions) ([]byte, error) {
	var err error
	if opts.Registries, opts.Auth, err = c.creds().ForName(ctx, api, name); err != nil {
		return nil, err
	}
	b, mediaType, err := api.RemoteManifest(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	c.log.Debugf("Inspecting image %s (raw manifest, %s, %d bytes)", name, mediaType, len(b))
	return b, nil
}

// describeRemote renders NAME:TAG@DIGEST for the -D log line: the repository
// as typed, qualified with the registry that answered when the name was
// short and the answer came from another registry (add-registry search).
func describeRemote(name, registryName, tag, dgst string) string {
	repo := name
	if ref, err := reference.ParseNormalizedNamed(name); err == nil {
		repo = reference.FamiliarName(ref)
		if registryName != "" && reference.Domain(ref) != registryName {
			// A short name found in an add-registry: the path as typed.
			repo = registryName + "/" + reference.FamiliarName(ref)
		}
	}
	return imagespec.FormatReference(repo, tag, dgst)
}
