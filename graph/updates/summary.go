package updates

import (
	"context"
	"net/http"
	"sort"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/imagespec"
)

// What changed: the summary an update check attaches to an outdated tag
// (diff=1) and the watch to its outdated and newer-version events, built
// from one diff of the local image with the remote one. It costs what the
// diff costs (the manifests, configs and the layers that differ), so it is
// built only on request, or by the watch for a tag whose state changed.

// Differ compares two images (graph.Service.ImageDiff).
type Differ interface {
	ImageDiff(ctx context.Context, req types.DiffRequest) (*types.ImageDiff, error)
}

// summarySections are the sections a summary reads: config and layers are
// not among them (the pull section names the layers to download).
var summarySections = []string{types.DiffPull, types.DiffFiles, types.DiffPackages, types.DiffSource, types.DiffSigner}

// maxConcurrentDiffs bounds the diffs of one check run in flight (2): a
// diff indexes the layers that differ, megabytes where a check's HEAD is
// bytes; two keep the registry and the daemon's two cores busy without
// crowding out the check's own requests.
const maxConcurrentDiffs = 2

// maxSummaryPackages caps each package list of a summary (4,096): a
// distribution's major upgrade changes a few thousand packages; past that
// the lists are cut (Truncated) and PackageChanges still counts them all,
// so that a check's line stays under the client's 1 MiB.
const maxSummaryPackages = 4096

// Summarize is what a summary says of a diff: the packages that changed
// (with versions), the bytes and layers a pull would download, how many
// paths changed in the layers that differ, the compare link, and whether
// the signer is the same. A section the diff lacks leaves its part zero
// and is named in Error, with the diff's reason (ImageDiff.Errors).
func Summarize(d *types.ImageDiff) types.DiffSummary {
	var out types.DiffSummary
	if d == nil {
		out.Error = "no diff"
		return out
	}
	var missing []string
	if p := d.Pull; p != nil {
		out.PullBytes, out.PullLayers = p.Bytes, len(p.Layers)
	} else {
		missing = append(missing, types.DiffPull)
	}
	if f := d.Files; f != nil {
		out.FilesChanged = len(f.Changes)
	} else {
		missing = append(missing, types.DiffFiles)
	}
	if p := d.Packages; p != nil {
		out.PackagesChanged = append(append([]types.PackageChange(nil), p.Upgraded...), p.Downgraded...)
		sort.Slice(out.PackagesChanged, func(i, j int) bool {
			a, b := out.PackagesChanged[i], out.PackagesChanged[j]
			if a.Type != b.Type {
				return a.Type < b.Type
			}
			return a.Name < b.Name
		})
		out.PackagesAdded = packageNames(p.Added)
		out.PackagesRemoved = packageNames(p.Removed)
		out.PackageChanges = len(out.PackagesChanged) + len(out.PackagesAdded) + len(out.PackagesRemoved)
		if len(out.PackagesChanged) > maxSummaryPackages {
			out.PackagesChanged, out.Truncated = out.PackagesChanged[:maxSummaryPackages], true
		}
		if len(out.PackagesAdded) > maxSummaryPackages {
			out.PackagesAdded, out.Truncated = out.PackagesAdded[:maxSummaryPackages], true
		}
		if len(out.PackagesRemoved) > maxSummaryPackages {
			out.PackagesRemoved, out.Truncated = out.PackagesRemoved[:maxSummaryPackages], true
		}
	} else {
		missing = append(missing, types.DiffPackages)
	}
	if s := d.Source; s != nil {
		out.CompareURL = s.CompareURL
	}
	if s := d.Signer; s != nil && (s.From != nil || s.To != nil || s.FromIdentity != "" || s.ToIdentity != "") {
		same := s.Same
		out.SameSigner = &same
	}
	var errs []string
	for _, sec := range missing {
		if e := d.Errors[sec]; e != "" {
			errs = append(errs, sec+": "+e)
		}
	}
	if len(errs) < len(missing) {
		var unsaid []string
		for _, sec := range missing {
			if d.Errors[sec] == "" {
				unsaid = append(unsaid, sec)
			}
		}
		errs = append(errs, "not built: "+strings.Join(unsaid, ", "))
	}
	out.Error = strings.Join(errs, "; ")
	return out
}

// packageNames are the packages as NAME@VERSION, sorted.
func packageNames(ps []types.Package) []string {
	if len(ps) == 0 {
		return nil
	}
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		n := p.Name
		if p.Version != "" {
			n += "@" + p.Version
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// summaryTarget is what a result's summary compares the local image with:
// the tag itself when it is outdated for the image's platform, else (with
// newer=1) the lowest newer version; "" when neither.
func summaryTarget(r types.RemoteCheckResult) string {
	if r.RemoteStatus == types.RemoteOutdated && (r.PlatformChanged == nil || *r.PlatformChanged) {
		return r.Repository + ":" + r.Tag
	}
	if r.RemoteStatus != types.RemoteError {
		if vs := r.NewerVersions(); len(vs) > 0 {
			return r.Repository + ":" + vs[0]
		}
	}
	return ""
}

// summarize builds the summary of r's local image against to (a
// repository:tag in its registry), with the credential sets by registry
// the check presents. A diff that fails is a summary with Error: the
// check's answer stands without it.
func summarize(ctx context.Context, d Differ, r types.RemoteCheckResult, to string, auth map[string]registry.AuthConfig, meta http.Header) *types.DiffSummary {
	req := types.DiffRequest{
		From:        types.DiffSide{Kind: types.SideLocal, Name: r.Repository + ":" + r.Tag},
		To:          types.DiffSide{Kind: types.SideRemote, Name: qualified(to)},
		Sections:    summarySections,
		Registries:  auth,
		MetaHeaders: meta,
	}
	if r.Platform != "" {
		if p, err := imagespec.ParsePlatform(r.Platform); err == nil {
			req.Platform = &p
		}
	}
	if req.Registries == nil {
		// Sent and empty: anonymous everywhere, as the check asks a
		// registry it has no set for.
		req.Registries = map[string]registry.AuthConfig{}
	}
	var out types.DiffSummary
	diff, err := d.ImageDiff(ctx, req)
	if err != nil {
		out.Error = err.Error()
	} else {
		out = Summarize(diff)
	}
	out.To = to
	return &out
}

// attachSummary sets res.Diff when the check asked for it (diff=1) and
// res is outdated or has a newer version: one diff, at most
// maxConcurrentDiffs of the run at a time.
func (s *Checker) attachSummary(ctx context.Context, run *checkRun, res *types.RemoteCheckResult) {
	if !run.opts.Diff {
		return
	}
	to := summaryTarget(*res)
	if to == "" {
		return
	}
	if s.differ == nil {
		res.Diff = &types.DiffSummary{To: to, Error: "the daemon builds no diff"}
		return
	}
	select {
	case run.diffs <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-run.diffs }()
	res.Diff = summarize(ctx, s.differ, *res, to, run.opts.Auth, run.opts.MetaHeaders)
}

// qualified is name with its registry spelled out (docker.io/library/…
// for a familiar Docker Hub name), so that the remote side is read from
// the registry the check asked, never found through the short-name search
// of another registry first.
func qualified(name string) string {
	if n, err := reference.ParseNormalizedNamed(name); err == nil {
		return n.String()
	}
	return name
}
