package diff

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// Config is the config section: Env (by variable), Entrypoint, Cmd, User,
// WorkingDir, ExposedPorts and Volumes (by member), Labels (by key),
// Created and the platform. A nil config is an empty one.
func Config(a, b *ocispec.Image) *types.ConfigDiff {
	if a == nil {
		a = &ocispec.Image{}
	}
	if b == nil {
		b = &ocispec.Image{}
	}
	d := &types.ConfigDiff{}
	add := func(field, from, to string) {
		if from != to {
			d.Changes = append(d.Changes, types.Changed{Field: field, From: from, To: to})
		}
	}
	addMap := func(field string, from, to map[string]string) {
		keys := slices.Sorted(maps.Keys(from))
		for k := range to {
			if _, ok := from[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			add(field+"["+k+"]", from[k], to[k])
		}
	}
	addMap("Env", envMap(a.Config.Env), envMap(b.Config.Env))
	add("Entrypoint", argv(a.Config.Entrypoint), argv(b.Config.Entrypoint))
	add("Cmd", argv(a.Config.Cmd), argv(b.Config.Cmd))
	add("User", a.Config.User, b.Config.User)
	add("WorkingDir", a.Config.WorkingDir, b.Config.WorkingDir)
	addMap("ExposedPorts", setMap(a.Config.ExposedPorts), setMap(b.Config.ExposedPorts))
	addMap("Volumes", setMap(a.Config.Volumes), setMap(b.Config.Volumes))
	addMap("Labels", a.Config.Labels, b.Config.Labels)
	add("Created", created(a.Created), created(b.Created))
	add("Platform", platform(a.Platform), platform(b.Platform))
	return d
}

// envMap is Env by variable name; a later duplicate wins, as it does in a
// container's environment.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// setMap is a set of the config (ports, volumes) as a map whose members
// are present ("present").
func setMap(s map[string]struct{}) map[string]string {
	m := make(map[string]string, len(s))
	for k := range s {
		m[k] = "present"
	}
	return m
}

// argv is an argument list as JSON (what Dockerfile's exec form shows);
// "" for none, so that nil and [] compare equal.
func argv(a []string) string {
	if len(a) == 0 {
		return ""
	}
	b, _ := json.Marshal(a)
	return string(b)
}

func created(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func platform(p ocispec.Platform) string {
	if p.OS == "" && p.Architecture == "" {
		return ""
	}
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	if p.OSVersion != "" {
		s += " (" + p.OSVersion + ")"
	}
	return s
}
