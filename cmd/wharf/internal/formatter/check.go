package formatter

import (
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// CheckedImageRow is an images row with the update check's answer for its tag.
type CheckedImageRow struct {
	ImageRow
	Remote          string
	RemoteStatus    string
	RemoteDigest    string
	RemoteError     string
	PlatformChanged *bool        `json:",omitempty"`
	RemoteTrust     *types.Trust `json:",omitempty"`

	// With --newer: the NEWER cell, and the newer versions per level.
	Newer                              string `json:",omitempty"`
	NewerPatch, NewerMinor, NewerMajor string `json:",omitempty"`
	NewerError                         string `json:",omitempty"`
	// With --base: the BASE cell and the base's fields.
	Base                                 string `json:",omitempty"`
	BaseStatus, BaseName, BaseDigest     string `json:",omitempty"`
	BaseCurrentDigest, BasePlatform      string `json:",omitempty"`
	BaseCurrentPlatformDigest, BaseError string `json:",omitempty"`
	BaseSource                           string `json:",omitempty"`
	// With --diff: the CHANGES cell, and the summary.
	Changes string             `json:",omitempty"`
	Diff    *types.DiffSummary `json:",omitempty"`
}

var checkHeaders = map[string]string{
	"Remote":       "REMOTE",
	"RemoteStatus": "REMOTE STATUS",
	"RemoteDigest": "REMOTE DIGEST",
	"RemoteError":  "REMOTE ERROR",
	"Newer":        "NEWER",
	"NewerPatch":   "NEWER PATCH",
	"NewerMinor":   "NEWER MINOR",
	"NewerMajor":   "NEWER MAJOR",
	"Base":         "BASE",
	"BaseStatus":   "BASE STATUS",
	"BaseName":     "BASE NAME",
	"BaseDigest":   "BASE DIGEST",
	"Changes":      "CHANGES",
}

// CheckedImages prints the list with each tagged row's answer in results
// (keyed repository:tag as the daemon names them): the default table gets
// a REMOTE column, and NEWER and BASE when newer and base were asked.
func CheckedImages(out io.Writer, list []image.Summary, o ImagesOptions, newer, base, diff bool, results map[string]types.RemoteCheckResult, now time.Time) error {
	extra := "\t{{.Remote}}"
	if newer {
		extra += "\t{{.Newer}}"
	}
	if base {
		extra += "\t{{.Base}}"
	}
	if diff {
		extra += "\t{{.Changes}}"
	}
	headers := maps.Clone(imageHeaders)
	maps.Copy(headers, checkHeaders)
	return writeImages(out, imagesFormat(o, extra), headers, list, o, now, func(row ImageRow) any {
		cr := CheckedImageRow{ImageRow: row}
		r, ok := results[row.Repository+":"+row.Tag]
		if !ok {
			return cr
		}
		cr.Remote = remoteColumn(r)
		cr.RemoteStatus, cr.RemoteDigest, cr.RemoteError = r.RemoteStatus, r.RemoteDigest, r.RemoteError
		cr.PlatformChanged, cr.RemoteTrust = r.PlatformChanged, r.RemoteTrust
		cr.NewerPatch, cr.NewerMinor, cr.NewerMajor, cr.NewerError = r.NewerPatch, r.NewerMinor, r.NewerMajor, r.NewerError
		cr.BaseStatus, cr.BaseName, cr.BaseDigest, cr.BaseError = r.BaseStatus, r.BaseName, r.BaseDigest, r.BaseError
		cr.BaseCurrentDigest, cr.BaseCurrentPlatformDigest, cr.BasePlatform = r.BaseCurrentDigest, r.BaseCurrentPlatformDigest, r.BasePlatform
		cr.BaseSource = r.BaseSource
		if newer {
			cr.Newer = newerColumn(r)
		}
		if base {
			cr.Base = baseColumn(r)
		}
		if diff {
			cr.Changes, cr.Diff = ChangesColumn(r.Diff), r.Diff
		}
		return cr
	})
}

// remoteColumn is the REMOTE cell: the status; an outdated index whose
// platform manifest did not change says so (a re-pull gives the same image).
func remoteColumn(r types.RemoteCheckResult) string {
	status := r.RemoteStatus
	if r.RemoteStatus == types.RemoteOutdated && r.PlatformChanged != nil && !*r.PlatformChanged {
		status = "outdated (platform unchanged)"
	}
	// The update the operator would take, as the signature policy sees it.
	if t := r.RemoteTrust; t != nil && t.Decision == "rejected" {
		status += ", update rejected by policy"
	}
	return status
}

// newerColumn is the NEWER cell: the newer versions, lowest level first
// ("1.25.4, 1.27.0, 2.0.0"); "-" for none, "error" when the listing failed.
func newerColumn(r types.RemoteCheckResult) string {
	switch v := r.NewerVersions(); {
	case len(v) > 0:
		return strings.Join(v, ", ")
	case r.NewerError != "":
		return "error"
	}
	return "-"
}

// baseColumn is the BASE cell: the status, and the base when outdated;
// "-" for an image that does not name its base.
func baseColumn(r types.RemoteCheckResult) string {
	switch r.BaseStatus {
	case "":
		return "-"
	case types.BaseOutdated:
		return "outdated (" + r.BaseName + ")"
	}
	return r.BaseStatus
}

// changesShown caps the packages the CHANGES cell names (3): the rest
// are counted; --format json has them all.
const changesShown = 3

// ChangesColumn is the CHANGES cell of --diff: the packages that changed
// (name from→to, +added, -removed; the first three, then how many more),
// the paths changed in the layers that differ, the bytes a pull
// downloads, a signer that changed, and the compare link; "-" for a tag
// with nothing to compare, "error: …" when the diff failed.
func ChangesColumn(d *types.DiffSummary) string {
	if d == nil {
		return "-"
	}
	pk := d.PackageLines()
	n := max(d.PackageChanges, len(pk))
	if len(pk) > changesShown {
		pk = pk[:changesShown]
	}
	var parts []string
	if len(pk) > 0 {
		s := strings.Join(pk, ", ")
		if n > len(pk) {
			s += fmt.Sprintf(" (+%d more)", n-len(pk))
		}
		parts = append(parts, s)
	}
	if d.Error != "" && d.PullBytes == 0 && d.FilesChanged == 0 && n == 0 {
		return "error: " + d.Error
	}
	parts = append(parts, plural(d.FilesChanged, "file"), HumanSize(d.PullBytes)+" to pull")
	if d.SameSigner != nil && !*d.SameSigner {
		parts = append(parts, "signer changed")
	}
	if d.CompareURL != "" {
		parts = append(parts, d.CompareURL)
	}
	return strings.Join(parts, "; ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// FamiliarTag is the answer's repository:tag as the user writes it
// (alpine:3.20, not docker.io/library/alpine:3.20).
func FamiliarTag(r types.RemoteCheckResult) string {
	if ref, err := reference.ParseNormalizedNamed(r.Repository + ":" + r.Tag); err == nil {
		return reference.FamiliarString(ref)
	}
	return r.Repository + ":" + r.Tag
}
