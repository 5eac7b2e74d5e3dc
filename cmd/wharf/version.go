package main

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/moby/moby/api/types/system"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
)

// versionInfo is what `wharf version --format` sees: .Client and .Server.
type versionInfo struct {
	Client clientVersion
	Server *system.VersionResponse
}

type clientVersion struct {
	Version    string
	APIVersion string `json:"ApiVersion"`
	GoVersion  string
	Os         string
	Arch       string
}

func newVersionCommand(c *cli) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version [OPTIONS]",
		Short: "Show the wharf version information",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionInfo{Client: clientVersion{
				Version: version, APIVersion: client.DefaultVersion,
				GoVersion: runtime.Version(), Os: runtime.GOOS, Arch: runtime.GOARCH,
			}}
			api, err := c.client()
			if err != nil {
				return err
			}
			sv, serr := api.Version(cmd.Context())
			if serr == nil {
				v.Server = &sv
			}
			if format != "" {
				if format == "json" {
					format = "{{json .}}"
				}
				b, _ := json.Marshal(v)
				if err := formatter.Templated(c.out, format, []json.RawMessage{b}); err != nil {
					return err
				}
				return serr
			}
			fmt.Fprintf(c.out, "Client:\n Version:           %s\n API version:       %s\n Go version:        %s\n OS/Arch:           %s/%s\n",
				v.Client.Version, v.Client.APIVersion, v.Client.GoVersion, v.Client.Os, v.Client.Arch)
			if serr != nil {
				return serr
			}
			fmt.Fprintf(c.out, "\nServer:\n Version:           %s\n API version:       %s (minimum version %s)\n Go version:        %s\n Git commit:        %s\n OS/Arch:           %s/%s\n",
				sv.Version, sv.APIVersion, sv.MinAPIVersion, sv.GoVersion, sv.GitCommit, sv.Os, sv.Arch)
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "", "Format output using a custom template:\n'json':             Print in JSON format\n'TEMPLATE':         Print output using the given Go template")
	return cmd
}
