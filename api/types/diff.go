package types

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Diff sections, as --sections and the sections= query name them.
const (
	DiffConfig   = "config"
	DiffLayers   = "layers"
	DiffPull     = "pull"
	DiffFiles    = "files"
	DiffPackages = "packages"
	DiffSource   = "source"
	DiffSigner   = "signer"
)

// DiffSections is every section, in the order a diff prints them.
var DiffSections = []string{DiffConfig, DiffLayers, DiffPull, DiffFiles, DiffPackages, DiffSource, DiffSigner}

// Kinds of DiffSide.Kind.
const (
	SideLocal   = "local"
	SideRemote  = "remote"
	SideArchive = "archive" // a docker-archive or oci-archive file on the daemon's host
)

// DiffSide is one side of a diff: "local:NAME", "remote:NAME",
// "archive:PATH", or a bare NAME (local, or remote with DiffRequest.Remote).
type DiffSide struct {
	Kind string
	Name string // an image reference, or the archive's path
}

// ParseDiffSide reads one side as the API and the CLI take it:
// "local:NAME", "remote:NAME", "archive:PATH", or a bare NAME, local
// unless remote. The prefix wins: a registry host named "remote" is
// written "remote:remote:5000/…".
func ParseDiffSide(s string, remote bool) (DiffSide, error) {
	for _, kind := range []string{SideLocal, SideRemote, SideArchive} {
		if name, ok := strings.CutPrefix(s, kind+":"); ok {
			if name == "" {
				return DiffSide{}, fmt.Errorf("diff side %q names no image%.0w", kind+":", errdefs.ErrInvalidArgument)
			}
			return DiffSide{Kind: kind, Name: name}, nil
		}
	}
	if s == "" {
		return DiffSide{}, fmt.Errorf("diff side names no image%.0w", errdefs.ErrInvalidArgument)
	}
	if remote {
		return DiffSide{Kind: SideRemote, Name: s}, nil
	}
	return DiffSide{Kind: SideLocal, Name: s}, nil
}

// String is the side as ParseDiffSide reads it.
func (s DiffSide) String() string { return s.Kind + ":" + s.Name }

// DiffRequest is GET /wharf/images/diff?from=A&to=B[&sections=…][&remote=1].
type DiffRequest struct {
	From, To DiffSide
	// Sections to build; empty: all of DiffSections.
	Sections    []string
	Platform    *ocispec.Platform
	Auth        *registry.AuthConfig
	Registries  map[string]registry.AuthConfig
	MetaHeaders http.Header
}

// DiffImage names what one side resolved to.
type DiffImage struct {
	Kind     string
	Name     string
	Digest   string // the platform manifest's digest
	Platform string `json:",omitempty"`
}

// ImageDiff is the answer of GET /wharf/images/diff: one key per section
// built; a section absent (nil) was not asked for, a section present and
// empty found no difference.
type ImageDiff struct {
	From, To DiffImage
	Config   *ConfigDiff   `json:",omitempty"`
	Layers   *LayersDiff   `json:",omitempty"`
	Pull     *PullCost     `json:",omitempty"`
	Files    *FilesDiff    `json:",omitempty"`
	Packages *PackagesDiff `json:",omitempty"`
	Source   *SourceDiff   `json:",omitempty"`
	Signer   *SignerDiff   `json:",omitempty"`
	// Errors names, by section, why a section asked for was not built;
	// the other sections stand.
	Errors map[string]string `json:",omitempty"`
}

// Changed is one value that differs; From or To is empty when the value
// is absent on that side.
type Changed struct {
	Field    string // "Env", "Labels", "Cmd", …; for maps "Labels[KEY]"
	From, To string `json:",omitempty"`
}

// ConfigDiff is the config section: Env, Entrypoint, Cmd, User,
// WorkingDir, ExposedPorts, Volumes, Labels, Created and the platform.
type ConfigDiff struct {
	Changes []Changed `json:",omitempty"`
}

// DiffLayer is one layer of the layers section.
type DiffLayer struct {
	Digest string
	Size   int64
}

// LayersDiff is the layers section: layers both sides hold, and those
// only one does.
type LayersDiff struct {
	Shared  []DiffLayer `json:",omitempty"`
	Added   []DiffLayer `json:",omitempty"`
	Removed []DiffLayer `json:",omitempty"`
}

// PullCost is what a pull of an image would download, given what the
// local store holds: also the answer of `wharf pull --dry-run`.
type PullCost struct {
	Image  string `json:",omitempty"`
	Digest string `json:",omitempty"`
	// Layers to download (not in the store), with their sizes.
	Layers []DiffLayer `json:",omitempty"`
	// Bytes is the sum of Layers' sizes plus the config's when the store
	// lacks it.
	Bytes int64
	// Present counts the layers the store holds already.
	Present int
	// Platform is the platform manifest's (os/arch[/variant]) when the
	// name resolved to an index.
	Platform string `json:",omitempty"`
	// TotalLayers counts the image's distinct layers; ConfigSize is the
	// config blob's size when the store lacks it (0 otherwise).
	TotalLayers int   `json:",omitempty"`
	ConfigSize  int64 `json:",omitempty"`
}

// FileChange is one path of the files section.
type FileChange struct {
	Path string
	// Change is "added", "removed" or "changed".
	Change string
	// From and To are the entry on each side (nil where absent, or where
	// the side's entry lies in a layer the diff did not index).
	From *FileEntry `json:",omitempty"`
	To   *FileEntry `json:",omitempty"`
	// What lists what differs for a changed path: "size", "mode",
	// "owner", "link", "content", "type".
	What []string `json:",omitempty"`
	// Unindexed is "from" or "to" when that side's entry would lie in the
	// shared layers, whose indexes were not at hand: Change then says what
	// the other side's layers did ("added" when they name the path,
	// "removed" when they remove it), as if the shared layers lacked it.
	Unindexed string `json:",omitempty"`
}

// FilesDiff is the files section, built from the layers that differ.
type FilesDiff struct {
	Changes []FileChange `json:",omitempty"`
	// LayersIndexed counts the layers the diff indexed (those that differ).
	LayersIndexed int
	// SharedCompared says the shared layers' indexes were at hand
	// (cached), so that paths only one side's layers touch were compared
	// with what the shared layers hold.
	SharedCompared bool `json:",omitempty"`
	// Truncated says Changes stopped at the diff's cap.
	Truncated bool `json:",omitempty"`
}

// SourceDiff is the source section, from the configs'
// org.opencontainers.image.source and .revision labels (or SLSA
// provenance).
type SourceDiff struct {
	FromRepository, FromRevision string `json:",omitempty"`
	ToRepository, ToRevision     string `json:",omitempty"`
	// CompareURL links the two revisions when both sides name one
	// repository of a forge that has compare pages.
	CompareURL string `json:",omitempty"`
}

// SignerDiff is the signer section: each side's trust verdict and
// signing identity.
type SignerDiff struct {
	From, To *Trust `json:",omitempty"`
	// FromIdentity and ToIdentity are the signing identities (a key's
	// fingerprint or a certificate's subject), when verified.
	FromIdentity, ToIdentity string `json:",omitempty"`
	Same                     bool
}

// DiffSummary is what an update check and the watch's events carry: what
// changed between the local image and the newer one, in numbers and names.
type DiffSummary struct {
	PackagesChanged []PackageChange `json:",omitempty"`
	PackagesAdded   []string        `json:",omitempty"`
	PackagesRemoved []string        `json:",omitempty"`
	PullBytes       int64
	PullLayers      int
	FilesChanged    int
	CompareURL      string `json:",omitempty"`
	// SameSigner is nil when the signer section could not tell.
	SameSigner *bool  `json:",omitempty"`
	Error      string `json:",omitempty"`
	// To names the image the local one was compared with: the tag as its
	// registry has it now (outdated), or the newer version's tag.
	To string `json:",omitempty"`
	// Truncated: the package lists were cut to fit an event attribute;
	// the counts are whole.
	Truncated bool `json:",omitempty"`
	// PackageChanges counts the packages upgraded, downgraded,
	// added and removed, whole even when the lists were cut.
	PackageChanges int `json:",omitempty"`
}

// Differs reports whether a section built found a difference: config
// changes, layers added or removed, file or package changes, another
// repository or revision, another verdict or signer. The pull section is
// a cost, not a difference.
func (d *ImageDiff) Differs() bool {
	if d == nil {
		return false
	}
	switch {
	case d.Config != nil && len(d.Config.Changes) > 0,
		d.Layers != nil && len(d.Layers.Added)+len(d.Layers.Removed) > 0,
		d.Files != nil && len(d.Files.Changes) > 0,
		d.Packages != nil && !d.Packages.Empty(),
		d.Source != nil && (d.Source.FromRepository != d.Source.ToRepository || d.Source.FromRevision != d.Source.ToRevision),
		d.Signer != nil && d.Signer.Differs():
		return true
	}
	return false
}

// Differs reports whether the two verdicts or signing identities differ.
func (s *SignerDiff) Differs() bool {
	if s == nil {
		return false
	}
	decision := func(t *Trust) string {
		if t == nil {
			return ""
		}
		return t.Decision
	}
	return decision(s.From) != decision(s.To) || s.FromIdentity != s.ToIdentity
}

// PackageLines is the summary's packages as one line each, as the CLI's
// CHANGES column and the watch's packages.changed attribute print them:
// "name from→to" for each changed package, then "+name" added and
// "-name" removed.
func (d *DiffSummary) PackageLines() []string {
	var lines []string
	for _, c := range d.PackagesChanged {
		lines = append(lines, c.Name+" "+c.From+"→"+c.To)
	}
	for _, a := range d.PackagesAdded {
		lines = append(lines, "+"+a)
	}
	for _, r := range d.PackagesRemoved {
		lines = append(lines, "-"+r)
	}
	return lines
}
