package main

import (
	"context"
	"encoding/json"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
)

// `wharf pull --dry-run NAME`: what the pull would download, from the
// manifest alone (GET /wharf/images/{name}/pull-cost): a table of the
// layers the store lacks and a last line with the totals; --format json
// the daemon's answer as one object, or a Go template applied to it.

const defaultPullCostFormat = "table {{.Layer}}\t{{.Size}}"

var pullCostHeaders = map[string]string{"Layer": "LAYER", "Size": "SIZE"}

// pullCostRow is one line of the dry run's table.
type pullCostRow struct {
	Layer, Size string
}

func runPullDryRun(ctx context.Context, c *cli, api *client.Client, name string, platform *ocispec.Platform, opts client.PullOptions, format string) error {
	cost, err := api.ImagePullCost(ctx, name, client.PullCostOptions{Platform: platform, Auth: opts.Auth, Registries: opts.Registries})
	if err != nil {
		return err
	}
	switch format {
	case "json":
		b, err := json.MarshalIndent(cost, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.out, "%s\n", b)
		return err
	case "", "table":
		format = defaultPullCostFormat
	}
	if !formatter.IsTable(format) {
		b, err := json.Marshal(cost)
		if err != nil {
			return err
		}
		return formatter.Templated(c.out, format, []json.RawMessage{b})
	}
	w, err := formatter.NewRows(c.out, format, pullCostHeaders)
	if err != nil {
		return err
	}
	for _, l := range cost.Layers {
		if err := w.Write(pullCostRow{Layer: l.Digest, Size: formatter.HumanSize(l.Size)}); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(c.out, pullCostSummary(cost))
	return err
}

// pullCostSummary is the dry run's last line: what the pull would
// download, and what the store has already.
func pullCostSummary(cost *client.PullCost) string {
	what := cost.Image
	if cost.Platform != "" {
		what += " (" + cost.Platform + ")"
	}
	if cost.Bytes == 0 {
		return fmt.Sprintf("%s: nothing to download, the store holds all %s", what, layers(cost.TotalLayers))
	}
	cfg := ""
	if cost.ConfigSize > 0 {
		cfg = fmt.Sprintf(" and the config (%s)", formatter.HumanSize(cost.ConfigSize))
	}
	return fmt.Sprintf("%s: %d of %d layers%s to download, %s (%d bytes); %s already present",
		what, len(cost.Layers), cost.TotalLayers, cfg, formatter.HumanSize(cost.Bytes), cost.Bytes, layers(cost.Present))
}

func layers(n int) string {
	if n == 1 {
		return "1 layer"
	}
	return fmt.Sprintf("%d layers", n)
}
