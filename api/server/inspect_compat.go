package server

import (
	"encoding/json"
	"time"

	"github.com/wharfproject/wharf/api/types"
)

// inspectOrder is dockerd's field order of ImageInspect across versions,
// followed by wharf's remote-inspect fields.
var inspectOrder = []string{
	"Id", "RepoTags", "RepoDigests", "Parent", "Comment", "Created",
	"Container", "ContainerConfig", "DockerVersion", "Author", "Config",
	"Architecture", "Variant", "Os", "OsVersion", "Size", "VirtualSize",
	"GraphDriver", "RootFS", "Metadata", "Descriptor", "Manifests", "Identity", "Trust",
	"Registry", "ServedBy", "Digest", "Tag", "PlatformManifestDigest", "ManifestAnnotations",
	"BaseName", "BaseDigest", "BaseSource", "Referrers", "RateLimit",
}

// configOrder is the field order of the image Config (container.Config in
// older dockerd).
var configOrder = []string{
	"Hostname", "Domainname", "User", "AttachStdin", "AttachStdout", "AttachStderr",
	"ExposedPorts", "Tty", "OpenStdin", "StdinOnce", "Env", "Cmd", "Healthcheck",
	"ArgsEscaped", "Image", "Volumes", "WorkingDir", "Entrypoint", "NetworkDisabled",
	"MacAddress", "OnBuild", "Labels", "StopSignal", "StopTimeout", "Shell",
}

// configDefaults are the Config keys dockerd printed even when empty below
// API 1.52 (moby's legacyConfigFields "v1.50-v1.51"; "v1.49" adds them too).
var configDefaults = map[string]json.RawMessage{
	"Cmd": json.RawMessage("null"), "Entrypoint": json.RawMessage("null"),
	"Env": json.RawMessage("null"), "Labels": json.RawMessage("null"),
	"OnBuild": json.RawMessage("null"), "User": json.RawMessage(`""`),
	"Volumes": json.RawMessage("null"), "WorkingDir": json.RawMessage(`""`),
}

// configDefaultsV149 are the container.Config keys API < 1.50 still shows
// (moby's legacyConfigFields "v1.49").
var configDefaultsV149 = map[string]json.RawMessage{
	"AttachStderr": json.RawMessage("false"), "AttachStdin": json.RawMessage("false"),
	"AttachStdout": json.RawMessage("false"), "Domainname": json.RawMessage(`""`),
	"Hostname": json.RawMessage(`""`), "Image": json.RawMessage(`""`),
	"OpenStdin": json.RawMessage("false"), "StdinOnce": json.RawMessage("false"),
	"Tty": json.RawMessage("false"),
}

// gateConfig fills the always-present Config keys (and the legacy
// container.Config ones below 1.50) under the values cfg already has.
func gateConfig(cfg json.RawMessage, version string) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(cfg) > 0 && string(cfg) != "null" {
		if err := json.Unmarshal(cfg, &m); err != nil {
			return cfg
		}
	}
	fill := func(defaults map[string]json.RawMessage) {
		for k, v := range defaults {
			if _, ok := m[k]; !ok {
				m[k] = v
			}
		}
	}
	// From 1.52 dockerd omits these keys when unset, as the OCI config
	// does (moby's legacyConfigFields "v1.50-v1.51" end there).
	if versionLess(version, "1.52") {
		fill(configDefaults)
	}
	if versionLess(version, "1.50") {
		fill(configDefaultsV149)
	}
	return orderedObject(m, configOrder)
}

// gateInspect renders a local (types.ImageInspect) or remote
// (types.RemoteImageInspect) inspect answer for an API version. Both go
// through this one function so the two agree field for field. The rules are
// dockerd's (image_routes.go getImagesByName, API CHANGELOG):
//
//   - RepoTags / RepoDigests are always arrays;
//   - VirtualSize (= Size) and a zero Created below 1.44;
//   - Container / ContainerConfig below 1.45;
//   - Descriptor from 1.48;
//   - legacy container.Config keys below 1.50;
//   - Parent / Comment / DockerVersion / Author always present below 1.52,
//     omitted when empty from 1.52;
//   - the empty Config keys of configDefaults below 1.52, omitted from 1.52;
//   - Identity at every version, and wharf's Trust beside it: moby adds
//     Identity at 1.53; wharf, whose API is 1.55 now, keeps serving it
//     below too, so that the docker CLI 28, which negotiates
//     1.50, reads a verified signature with `docker inspect -f
//     '{{.Identity}}'`. An extra field is one an older client ignores.
//
// From API 1.50 the typed gate (gateInspectTyped) answers; gateInspectMap
// states the rules for every version and is the reference the typed gate is
// tested against.
func gateInspect(v any, legacy types.LegacyImageFields, version string) ([]byte, error) {
	if versionAtLeast(version, typedGateMinVersion) {
		return gateInspectTyped(v, legacy, version)
	}
	return gateInspectMap(v, legacy, version)
}

// gateInspectMap is the version gate on a generic JSON object, for every
// API version.
func gateInspectMap(v any, legacy types.LegacyImageFields, version string) ([]byte, error) {
	m, err := toObject(v)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"RepoTags", "RepoDigests"} {
		if isNullOrMissing(m, k) {
			m[k] = json.RawMessage("[]")
		}
	}
	if versionLess(version, "1.44") {
		if size, ok := m["Size"]; ok {
			m["VirtualSize"] = size
		} else {
			m["VirtualSize"] = json.RawMessage("0")
		}
		if created, ok := m["Created"]; !ok || string(created) == `""` {
			m["Created"] = rawJSON(time.Time{}.Format(time.RFC3339Nano))
		}
	}
	if versionLess(version, "1.45") {
		m["Container"] = rawJSON(legacy.Container)
		cc := json.RawMessage("null")
		if legacy.ContainerConfig != nil {
			cc = rawJSON(legacy.ContainerConfig)
		}
		// Older dockerd always showed a (possibly empty) container.Config.
		m["ContainerConfig"] = gateConfig(cc, "1.49")
	}
	if versionLess(version, "1.48") {
		delete(m, "Descriptor")
	}
	m["Config"] = gateConfig(m["Config"], version)
	legacyStrings := map[string]string{"Parent": legacy.Parent, "DockerVersion": legacy.DockerVersion}
	if versionLess(version, "1.52") {
		for k, s := range legacyStrings {
			m[k] = rawJSON(s)
		}
		for _, k := range []string{"Comment", "Author"} {
			if _, ok := m[k]; !ok {
				m[k] = json.RawMessage(`""`)
			}
		}
	} else {
		for k, s := range legacyStrings {
			if s != "" {
				m[k] = rawJSON(s)
			}
		}
	}
	if _, remote := v.(*types.RemoteImageInspect); remote {
		// A registry knows nothing of the local-only fields: no storage
		// driver, no last tag time, and VirtualSize was the size of the
		// unpacked layers on disk. Leaving them out keeps a zero
		// LastTagTime from looking like a fact.
		for _, k := range []string{"GraphDriver", "Metadata", "VirtualSize"} {
			delete(m, k)
		}
	}
	return orderedObject(m, inspectOrder), nil
}
