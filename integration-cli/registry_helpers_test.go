package integration

import (
	"context"
	"encoding/json"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// registries are the real registries a suite shares: one per auth mode.
type registries struct {
	anon, basic, token *testregistry.Registry
}

// auth is the X-Registry-Auth for reg's default user; "" for an anonymous registry.
func auth(reg *testregistry.Registry) string {
	if reg.Auth == testregistry.AuthNone {
		return ""
	}
	return RegistryAuth(reg.Username, reg.Password, reg.Host)
}

func fixtureCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

// pushImage puts a random image into reg as repo:tag without wharf.
func pushImage(c *check.C, reg *testregistry.Registry, repo, tag string, opts testregistry.ImageOptions) *testregistry.Image {
	img, err := testregistry.NewImage(opts)
	c.Assert(err, check.IsNil)
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(reg.Client().PushImage(ctx, repo, tag, img), check.IsNil)
	return img
}

// pushIndex puts a random multi-platform image into reg as repo:tag without wharf.
func pushIndex(c *check.C, reg *testregistry.Registry, repo, tag string, opts testregistry.IndexOptions) *testregistry.Index {
	ix, err := testregistry.NewIndex(opts)
	c.Assert(err, check.IsNil)
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(reg.Client().PushIndex(ctx, repo, tag, ix), check.IsNil)
	return ix
}

// platformQuery is the JSON platform parameter, URL-escaped.
func platformQuery(p ocispec.Platform) string {
	b, _ := json.Marshal(p)
	return url.QueryEscape(string(b))
}

// Fields that only one side of an inspect has (DESIGN.md, remote inspect §5).
var (
	localOnlyFields  = []string{"GraphDriver", "Metadata", "VirtualSize"}
	remoteOnlyFields = []string{"Registry", "Digest", "Tag", "PlatformManifestDigest", "ManifestAnnotations", "Manifests", "ServedBy"}
)

// compareLocalRemote checks that every field both inspects may have is equal.
func compareLocalRemote(c *check.C, local, remote map[string]any) {
	skip := map[string]bool{}
	for _, k := range append(localOnlyFields, remoteOnlyFields...) {
		skip[k] = true
	}
	keys := map[string]bool{}
	for k := range local {
		keys[k] = true
	}
	for k := range remote {
		keys[k] = true
	}
	var names []string
	for k := range keys {
		if !skip[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var diffs []string
	for _, k := range names {
		if !reflect.DeepEqual(local[k], remote[k]) {
			lb, _ := json.Marshal(local[k])
			rb, _ := json.Marshal(remote[k])
			diffs = append(diffs, k+":\n  local:  "+string(lb)+"\n  remote: "+string(rb))
		}
	}
	c.Assert(diffs, check.HasLen, 0, check.Commentf("local and remote inspect differ:\n%s", strings.Join(diffs, "\n")))
	for _, k := range remoteOnlyFields[:3] {
		_, ok := remote[k]
		c.Assert(ok, check.Equals, true, check.Commentf("remote inspect lacks %s", k))
	}
}

// inspectArray parses the CLI's JSON array output.
func inspectArray(c *check.C, out string) []map[string]any {
	var arr []map[string]any
	c.Assert(json.Unmarshal([]byte(out), &arr), check.IsNil, check.Commentf("inspect output: %s", out))
	return arr
}
