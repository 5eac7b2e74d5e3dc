package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/client"
)

const (
	defaultImagesFormat        = "table {{.Repository}}\t{{.Tag}}\t{{.ID}}\t{{.CreatedSince}}\t{{.Size}}"
	defaultImagesDigestsFormat = "table {{.Repository}}\t{{.Tag}}\t{{.Digest}}\t{{.ID}}\t{{.CreatedSince}}\t{{.Size}}"
	quietImagesFormat          = "{{.ID}}"
)

// imageHeaders are docker's column titles for image rows.
var imageHeaders = map[string]string{
	"Repository":   "REPOSITORY",
	"Tag":          "TAG",
	"ID":           "IMAGE ID",
	"Digest":       "DIGEST",
	"CreatedSince": "CREATED",
	"CreatedAt":    "CREATED AT",
	"Size":         "SIZE",
	"Containers":   "CONTAINERS",
	"SharedSize":   "SHARED SIZE",
	"UniqueSize":   "UNIQUE SIZE",
	"VirtualSize":  "VIRTUAL SIZE",
}

// imageRow is one line of `wharf images`: what templates see, and the JSON
// of --format json (the fields and names of docker's).
type imageRow struct {
	Containers   string
	CreatedAt    string
	CreatedSince string
	Digest       string
	ID           string
	Repository   string
	SharedSize   string
	Size         string
	Tag          string
	UniqueSize   string
	VirtualSize  string
}

type imagesOptions struct {
	all, quiet, digests, noTrunc bool
	filters                      []string
	format                       string
	check                        checkRemoteFlags // images_check.go
}

func newImagesCommand(c *cli) *cobra.Command {
	var o imagesOptions
	cmd := &cobra.Command{
		Use:     "images [OPTIONS] [REPOSITORY[:TAG]]",
		Aliases: []string{"image-ls"},
		Short:   "List images",
		Args: func(cmd *cobra.Command, args []string) error {
			if o.check.enabled {
				return nil // --check-remote takes any number of names
			}
			return requiresRangeArgs(0, 1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.check.enabled {
				return runImagesCheckRemote(cmd.Context(), c, o, args)
			}
			if err := o.check.validate(); err != nil {
				return err
			}
			f, err := parseFilterFlags(o.filters)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				if f["reference"] == nil {
					f["reference"] = map[string]bool{}
				}
				f["reference"][args[0]] = true
			}
			api, err := c.client()
			if err != nil {
				return err
			}
			list, err := api.ImageList(cmd.Context(), client.ImageListOptions{All: o.all, Filters: f})
			if err != nil {
				return err
			}
			return writeImages(c, list, o, time.Now())
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.all, "all", "a", false, "Show all images (default hides intermediate images)")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "Only show image IDs")
	fl.BoolVar(&o.digests, "digests", false, "Show digests")
	fl.BoolVar(&o.noTrunc, "no-trunc", false, "Don't truncate output")
	fl.StringArrayVarP(&o.filters, "filter", "f", nil, "Filter output based on conditions provided")
	o.check.register(fl)
	fl.StringVar(&o.format, "format", "", "Format output using a custom template:\n'table':            Print output in table format with column headers (default)\n'table TEMPLATE':   Print output in table format using the given Go template\n'json':             Print in JSON format\n'TEMPLATE':         Print output using the given Go template")
	return cmd
}

// parseFilterFlags turns repeated --filter k=v into Filters.
func parseFilterFlags(in []string) (types.Filters, error) {
	f := types.Filters{}
	for _, kv := range in {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" {
			return nil, fmt.Errorf("bad format of filter (expected name=value)")
		}
		if f[k] == nil {
			f[k] = map[string]bool{}
		}
		f[k][v] = true
	}
	return f, nil
}

// writeImages prints the list with the options' format.
func writeImages(c *cli, list []image.Summary, o imagesOptions, now time.Time) error {
	format := o.format
	switch {
	case o.quiet:
		format = quietImagesFormat
	case format == "" || format == "table":
		format = defaultImagesFormat
		if o.digests {
			format = defaultImagesDigestsFormat
		}
	}
	w, err := newRowWriter(c.out, format, imageHeaders)
	if err != nil {
		return err
	}
	for _, img := range list {
		for _, row := range imageRows(img, o.digests || strings.Contains(format, ".Digest"), !o.noTrunc, now) {
			if err := w.Write(row); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}

// imageRows expands one image into rows the way docker does: one per
// repository:tag (times its digests with --digests), then one per
// repository known only by digest; a dangling image is one <none> row.
func imageRows(img image.Summary, withDigests, trunc bool, now time.Time) []imageRow {
	base := imageRow{
		Containers:   "N/A",
		CreatedAt:    time.Unix(img.Created, 0).Format("2006-01-02 15:04:05 -0700 MST"),
		CreatedSince: sinceString(time.Unix(img.Created, 0), now),
		ID:           img.ID,
		Size:         humanSize(img.Size),
		SharedSize:   "N/A",
		UniqueSize:   "N/A",
		VirtualSize:  humanSize(img.Size),
	}
	if img.Containers >= 0 {
		base.Containers = fmt.Sprint(img.Containers)
	}
	if img.SharedSize >= 0 {
		base.SharedSize = humanSize(img.SharedSize)
		base.UniqueSize = humanSize(img.Size - img.SharedSize)
	}
	if trunc {
		base.ID = shortID(img.ID)
	}
	row := func(repo, tag, dgst string) imageRow {
		r := base
		r.Repository, r.Tag, r.Digest = repo, tag, dgst
		return r
	}

	repoTags := map[string][]string{}
	repoDigests := map[string][]string{}
	for _, s := range img.RepoTags {
		ref, err := reference.ParseNormalizedNamed(s)
		if err != nil {
			continue
		}
		if nt, ok := ref.(reference.NamedTagged); ok {
			name := reference.FamiliarName(ref)
			repoTags[name] = append(repoTags[name], nt.Tag())
		}
	}
	for _, s := range img.RepoDigests {
		ref, err := reference.ParseNormalizedNamed(s)
		if err != nil {
			continue
		}
		if cn, ok := ref.(reference.Canonical); ok {
			name := reference.FamiliarName(ref)
			repoDigests[name] = append(repoDigests[name], cn.Digest().String())
		}
	}
	if len(repoTags) == 0 && len(repoDigests) == 0 {
		return []imageRow{row("<none>", "<none>", "<none>")}
	}
	var rows []imageRow
	for _, repo := range sortedKeys(repoTags) {
		digests := repoDigests[repo]
		delete(repoDigests, repo)
		if !withDigests {
			digests = nil
		}
		for _, tag := range repoTags[repo] {
			if len(digests) == 0 {
				rows = append(rows, row(repo, tag, "<none>"))
				continue
			}
			for _, d := range digests {
				rows = append(rows, row(repo, tag, d))
			}
		}
	}
	for _, repo := range sortedKeys(repoDigests) {
		if withDigests {
			for _, d := range repoDigests[repo] {
				rows = append(rows, row(repo, "<none>", d))
			}
		} else {
			rows = append(rows, row(repo, "<none>", ""))
		}
	}
	return rows
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
