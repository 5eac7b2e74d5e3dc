package registry

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/wharfproject/wharf/imagespec"
)

func FuzzDecodeDocument(f *testing.F) {
	for _, s := range []string{
		`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"digest":"sha256:` + strings.Repeat("a", 64) + `","size":1},"layers":[]}`,
		`{"schemaVersion":2,"manifests":[{"digest":"sha256:` + strings.Repeat("b", 64) + `","size":1,"platform":{"os":"linux","architecture":"amd64"}}]}`,
		`{"schemaVersion":1,"fsLayers":[{"blobSum":"sha256:` + strings.Repeat("c", 64) + `"}],"history":[{"v1Compatibility":"{}"}],"signatures":[{"protected":"eyJmb3JtYXRMZW5ndGgiOjEwLCJmb3JtYXRUYWlsIjoiZlEifQ"}]}`,
		`{"manifests":[],"layers":[]}`,
		`null`,
		`[]`,
	} {
		f.Add(s, ocispec.MediaTypeImageManifest)
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, body, served string) {
		d, err := decodeDocument("fuzz", served, []byte(body))
		if err != nil {
			return
		}
		switch d.kind {
		case kindIndex:
			_, _ = imagespec.SelectManifest(&d.index, ocispec.Platform{OS: "linux", Architecture: "arm64"})
		case kindManifest:
			if d.manifest.Config.Digest.Validate() != nil {
				t.Errorf("accepted a manifest with an invalid config digest")
			}
		case kindSchema1:
			if len(d.v1Layers) == 0 {
				t.Errorf("accepted a schema1 manifest without layers")
			}
		default:
			t.Errorf("unknown kind %d", d.kind)
		}
		_ = imagespec.Sniff([]byte(body))
	})
}

// FuzzParseChallenges: any WWW-Authenticate values parse without panic into
// at most maxChallenges challenges with lower-case token schemes and
// non-empty lower-case param names; the challenge wharfd answers, written
// out as the 401 is rewritten, parses back to itself.
func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:x:pull"`,
		`Basic realm="r"`,
		`Bearer realm="a\"b", service=x`,
		`Bearer realm="`,
		`=`,
		`Negotiate, Bearer realm="https://r/token"`,
		`Negotiate YIIFyQYGKwYBBQUCoIIFvTCCBbmg==, Basic realm="x"`,
		`NTLM`,
		`Digest realm="x", qop="auth", nonce="n", Bearer realm="y"`,
		`Bearer realm="a",, ,service="b"`,
	} {
		f.Add(s, "")
		f.Add("Negotiate", s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		cs := parseChallenges([]string{a, b})
		if len(cs) > 2*maxChallenges {
			t.Fatalf("%d challenges", len(cs))
		}
		for _, c := range cs {
			if c.scheme == "" || c.scheme != strings.ToLower(c.scheme) {
				t.Errorf("scheme %q", c.scheme)
			}
			for k := range c.params {
				if k == "" || k != strings.ToLower(k) {
					t.Errorf("param name %q from %q %q", k, a, b)
				}
			}
		}
		c, ok := preferredChallenge([]string{a, b})
		if !ok {
			return
		}
		if c.scheme != "bearer" && c.scheme != "basic" {
			t.Fatalf("preferred scheme %q", c.scheme)
		}
		back := parseChallenges([]string{c.String()})
		if len(back) != 1 || back[0].scheme != c.scheme || !reflect.DeepEqual(back[0].params, c.params) {
			t.Errorf("%q → %+v → %q → %+v", a+" | "+b, c, c.String(), back)
		}
	})
}

// FuzzTokenLifetime: whatever expires_in holds, the lifetime is positive
// and at most a day (a huge one once overflowed into "already expired").
func FuzzTokenLifetime(f *testing.F) {
	for _, s := range []string{`300`, `"300"`, `10000000000`, `1e400`, `-1`, `0.001`, `NaN`, `"Infinity"`, `null`, `{}`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d := tokenLifetime(json.RawMessage(s)); d <= 0 || d > maxTokenLifetime {
			t.Errorf("tokenLifetime(%q) = %s", s, d)
		}
	})
}
