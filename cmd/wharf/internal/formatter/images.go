package formatter

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
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

// ImageRow is one line of `wharf images`: what templates see, and the JSON
// of --format json (the fields and names of docker's).
type ImageRow struct {
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

// ImagesOptions are the flags of `wharf images` that shape its output.
type ImagesOptions struct {
	Quiet, Digests, NoTrunc bool
	Format                  string
}

// imagesFormat is the template o asks for; extra columns are added to the
// default table only.
func imagesFormat(o ImagesOptions, extra string) string {
	switch {
	case o.Quiet:
		return quietImagesFormat
	case o.Format == "" || o.Format == "table":
		if o.Digests {
			return defaultImagesDigestsFormat + extra
		}
		return defaultImagesFormat + extra
	}
	return o.Format
}

// Images prints the list with the options' format.
func Images(out io.Writer, list []image.Summary, o ImagesOptions, now time.Time) error {
	return writeImages(out, imagesFormat(o, ""), imageHeaders, list, o, now, func(r ImageRow) any { return r })
}

// writeImages prints each image's rows (imageRows) through format, as row
// makes them.
func writeImages(out io.Writer, format string, headers map[string]string, list []image.Summary, o ImagesOptions, now time.Time, row func(ImageRow) any) error {
	w, err := NewRows(out, format, headers)
	if err != nil {
		return err
	}
	for _, img := range list {
		for _, r := range imageRows(img, o.Digests || strings.Contains(format, ".Digest"), !o.NoTrunc, now) {
			if err := w.Write(row(r)); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}

// imageRows expands one image into rows the way docker does: one per
// repository:tag (times its digests with --digests), then one per
// repository known only by digest; a dangling image is one <none> row.
func imageRows(img image.Summary, withDigests, trunc bool, now time.Time) []ImageRow {
	base := ImageRow{
		Containers:   "N/A",
		CreatedAt:    time.Unix(img.Created, 0).Format("2006-01-02 15:04:05 -0700 MST"),
		CreatedSince: Since(time.Unix(img.Created, 0), now),
		ID:           img.ID,
		Size:         HumanSize(img.Size),
		SharedSize:   "N/A",
		UniqueSize:   "N/A",
		VirtualSize:  HumanSize(img.Size),
	}
	if img.Containers >= 0 {
		base.Containers = fmt.Sprint(img.Containers)
	}
	if img.SharedSize >= 0 {
		base.SharedSize = HumanSize(img.SharedSize)
		base.UniqueSize = HumanSize(img.Size - img.SharedSize)
	}
	if trunc {
		base.ID = ShortID(img.ID)
	}
	row := func(repo, tag, dgst string) ImageRow {
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
		return []ImageRow{row("<none>", "<none>", "<none>")}
	}
	var rows []ImageRow
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
