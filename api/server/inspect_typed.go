package server

import (
	"encoding/json"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/storage"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// typedGateMinVersion is the oldest API version gateInspectTyped serves.
// From 1.50 on no legacy container.Config key, no Container/ContainerConfig
// and no VirtualSize is added, so the answer is the inspect struct itself in
// dockerd's field order with a few fields forced present: one json.Marshal of
// a struct, where the map gate (gateInspect) marshals, decodes into a generic
// object, re-encodes every value in order and does the same again for Config
// — about three quarters of a warm remote inspect's CPU in wharfd
// (BenchmarkHotRemoteInspectHandler). 1.50 is also the version wharfd speaks by
// default, so it is what the docker CLI negotiates. Older versions keep the
// map gate. TestTypedGateMatchesMapGate holds the two byte-identical for
// every version from 1.50 up.
const typedGateMinVersion = "1.50"

// gatedInspect is ImageInspect (and RemoteImageInspect) as dockerd prints it
// from API 1.50: the fields in inspectOrder. A pointer field with omitempty
// is one the gate decides to show or not; a plain field without omitempty is
// always shown.
type gatedInspect struct {
	ID            string                  `json:"Id"`
	RepoTags      []string                // never null: [] when empty
	RepoDigests   []string                // never null
	Parent        *string                 `json:",omitempty"` // always below 1.52, when set from 1.52
	Comment       *string                 `json:",omitempty"` // same rule
	Created       string                  `json:",omitempty"`
	DockerVersion *string                 `json:",omitempty"` // same rule as Parent
	Author        *string                 `json:",omitempty"` // same rule as Comment
	Config        gatedConfig             // always an object
	Architecture  string                  //
	Variant       string                  `json:",omitempty"`
	Os            string                  //
	OsVersion     string                  `json:",omitempty"`
	Size          int64                   //
	GraphDriver   *storage.DriverData     `json:",omitempty"` // local only
	RootFS        image.RootFS            //
	Metadata      *image.Metadata         `json:",omitempty"` // local only (always shown there)
	Descriptor    *ocispec.Descriptor     `json:",omitempty"`
	Manifests     []image.ManifestSummary `json:",omitempty"`
	Identity      *image.Identity         `json:",omitempty"` // at every version
	Trust         *types.Trust            `json:",omitempty"` // wharf's, local and remote

	// RemoteImageInspect's own fields (Registry, Digest and Tag always
	// shown in a remote answer, never in a local one).
	// Every field RemoteImageInspect adds must be here, in
	// inspectOrder's order: TestTypedGateMatchesMapGate fills them all.
	Registry               *string           `json:",omitempty"`
	ServedBy               string            `json:",omitempty"`
	Digest                 *string           `json:",omitempty"`
	Tag                    *string           `json:",omitempty"`
	PlatformManifestDigest string            `json:",omitempty"`
	ManifestAnnotations    map[string]string `json:",omitempty"`
	BaseName               string            `json:",omitempty"`
	BaseDigest             string            `json:",omitempty"`
	BaseSource             string            `json:",omitempty"`
	Referrers              *types.Referrers  `json:",omitempty"`
	RateLimit              *types.RateLimit  `json:",omitempty"`

	// cfg holds the Config values gatedConfig points at, in g itself: g
	// escapes to the heap once (json.Marshal(&g)), so the pointers cost no
	// allocation.
	cfg configValues
}

// gatedConfig is the image Config in configOrder. The keys dockerd printed
// even when empty below API 1.52 (configDefaults: a nil or empty list or
// map as null, an empty string as "") are pointers: set, they print; nil,
// they are left out, as from 1.52 an unset one is.
type gatedConfig struct {
	User         *string                       `json:",omitempty"`
	ExposedPorts map[string]struct{}           `json:",omitempty"`
	Env          *[]string                     `json:",omitempty"`
	Cmd          *[]string                     `json:",omitempty"`
	Healthcheck  *dockerspec.HealthcheckConfig `json:",omitempty"`
	ArgsEscaped  bool                          `json:",omitempty"`
	Volumes      *map[string]struct{}          `json:",omitempty"`
	WorkingDir   *string                       `json:",omitempty"`
	Entrypoint   *[]string                     `json:",omitempty"`
	OnBuild      *[]string                     `json:",omitempty"`
	Labels       *map[string]string            `json:",omitempty"`
	StopSignal   string                        `json:",omitempty"`
	Shell        []string                      `json:",omitempty"`
}

// configValues are the values of gatedConfig's pointer keys, empty lists
// and maps made nil (the source's omitempty followed by the gate's
// default prints them null).
type configValues struct {
	User, WorkingDir              string
	Env, Cmd, Entrypoint, OnBuild []string
	Volumes                       map[string]struct{}
	Labels                        map[string]string
}

// gateInspectTyped is gateInspect for API ≥ typedGateMinVersion; v is a
// *types.ImageInspect or a *types.RemoteImageInspect.
func gateInspectTyped(v any, legacy types.LegacyImageFields, version string) ([]byte, error) {
	var (
		ii     *types.ImageInspect
		remote *types.RemoteImageInspect
	)
	switch x := v.(type) {
	case *types.ImageInspect:
		ii = x
	case *types.RemoteImageInspect:
		remote, ii = x, &x.ImageInspect
	default:
		return gateInspectMap(v, legacy, version)
	}
	r := &ii.InspectResponse
	g := gatedInspect{
		ID:           r.ID,
		RepoTags:     nonNilStrings(r.RepoTags),
		RepoDigests:  nonNilStrings(r.RepoDigests),
		Created:      r.Created,
		Architecture: r.Architecture,
		Variant:      r.Variant,
		Os:           r.Os,
		OsVersion:    r.OsVersion,
		Size:         r.Size,
		RootFS:       r.RootFS,
		Descriptor:   r.Descriptor,
		Manifests:    r.Manifests,
	}
	below152 := versionLess(version, "1.52") // once: each comparison splits both strings
	gateConfigTyped(&g.Config, &g.cfg, r.Config, below152)
	if below152 {
		g.Parent, g.DockerVersion = &legacy.Parent, &legacy.DockerVersion
		g.Comment, g.Author = &r.Comment, &r.Author
	} else {
		g.Parent, g.DockerVersion = nonEmpty(&legacy.Parent), nonEmpty(&legacy.DockerVersion)
		g.Comment, g.Author = nonEmpty(&r.Comment), nonEmpty(&r.Author)
	}
	// moby adds Identity at 1.53; wharf serves it, and Trust, at every
	// version (gateInspect says why).
	g.Identity, g.Trust = r.Identity, ii.Trust
	if remote != nil {
		// A registry knows nothing of the local-only fields (gateInspect).
		g.Registry, g.Digest, g.Tag = &remote.Registry, &remote.Digest, &remote.Tag
		g.ServedBy = remote.ServedBy
		g.PlatformManifestDigest = remote.PlatformManifestDigest
		g.ManifestAnnotations = remote.ManifestAnnotations
		g.BaseName, g.BaseDigest, g.BaseSource = remote.BaseName, remote.BaseDigest, remote.BaseSource
		g.Referrers = remote.Referrers
		g.RateLimit = remote.RateLimit
	} else {
		g.GraphDriver = r.GraphDriver
		g.Metadata = &r.Metadata
	}
	return json.Marshal(&g)
}

// gateConfigTyped fills g from c, its pointer keys pointing into v: every
// one when all (below 1.52), only those with a value from 1.52.
func gateConfigTyped(g *gatedConfig, v *configValues, c *dockerspec.DockerOCIImageConfig, all bool) {
	if c != nil {
		*v = configValues{
			User: c.User, WorkingDir: c.WorkingDir,
			Env: nilIfEmpty(c.Env), Cmd: nilIfEmpty(c.Cmd), Entrypoint: nilIfEmpty(c.Entrypoint), OnBuild: nilIfEmpty(c.OnBuild),
			Volumes: nilIfEmptyMap(c.Volumes), Labels: nilIfEmptyMap(c.Labels),
		}
		g.ExposedPorts, g.Healthcheck, g.ArgsEscaped = c.ExposedPorts, c.Healthcheck, c.ArgsEscaped
		g.StopSignal, g.Shell = c.StopSignal, c.Shell
	}
	if all || v.User != "" {
		g.User = &v.User
	}
	if all || v.WorkingDir != "" {
		g.WorkingDir = &v.WorkingDir
	}
	for _, f := range []struct {
		dst **[]string
		src *[]string
	}{{&g.Env, &v.Env}, {&g.Cmd, &v.Cmd}, {&g.Entrypoint, &v.Entrypoint}, {&g.OnBuild, &v.OnBuild}} {
		if all || *f.src != nil {
			*f.dst = f.src
		}
	}
	if all || v.Volumes != nil {
		g.Volumes = &v.Volumes
	}
	if all || v.Labels != nil {
		g.Labels = &v.Labels
	}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// nilIfEmpty makes an empty list print as null, as the source's omitempty
// followed by the gate's default does.
func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func nilIfEmptyMap[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

func nonEmpty(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}
