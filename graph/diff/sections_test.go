package diff

import (
	"reflect"
	"testing"
	"time"

	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

func TestConfig(t *testing.T) {
	t1, t2 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC)
	img := func(mod func(*ocispec.Image)) *ocispec.Image {
		i := &ocispec.Image{Created: &t1, Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}, Config: ocispec.ImageConfig{
			Env: []string{"PATH=/bin", "A=1"}, Cmd: []string{"/app"}, User: "app", WorkingDir: "/srv",
			ExposedPorts: map[string]struct{}{"80/tcp": {}}, Volumes: map[string]struct{}{"/data": {}},
			Labels: map[string]string{"version": "1"},
		}}
		if mod != nil {
			mod(i)
		}
		return i
	}
	for _, tc := range []struct {
		name string
		a, b *ocispec.Image
		want []types.Changed
	}{
		{"the same", img(nil), img(nil), nil},
		{"nil and empty", nil, &ocispec.Image{}, nil},
		{"env by variable", img(nil), img(func(i *ocispec.Image) { i.Config.Env = []string{"A=2", "PATH=/bin", "B=x"} }),
			[]types.Changed{{Field: "Env[A]", From: "1", To: "2"}, {Field: "Env[B]", To: "x"}}},
		{"cmd, entrypoint, user, workdir", img(nil), img(func(i *ocispec.Image) {
			i.Config.Cmd, i.Config.Entrypoint, i.Config.User, i.Config.WorkingDir = []string{"/app", "-v"}, []string{"tini"}, "", "/"
		}), []types.Changed{{Field: "Entrypoint", To: `["tini"]`}, {Field: "Cmd", From: `["/app"]`, To: `["/app","-v"]`}, {Field: "User", From: "app"}, {Field: "WorkingDir", From: "/srv", To: "/"}}},
		{"ports, volumes, labels", img(nil), img(func(i *ocispec.Image) {
			i.Config.ExposedPorts = map[string]struct{}{"443/tcp": {}}
			i.Config.Volumes = nil
			i.Config.Labels = map[string]string{"version": "2", "new": "y"}
		}), []types.Changed{
			{Field: "ExposedPorts[443/tcp]", To: "present"}, {Field: "ExposedPorts[80/tcp]", From: "present"},
			{Field: "Volumes[/data]", From: "present"},
			{Field: "Labels[new]", To: "y"}, {Field: "Labels[version]", From: "1", To: "2"},
		}},
		{"created and platform", img(nil), img(func(i *ocispec.Image) { i.Created = &t2; i.Platform.Architecture, i.Platform.Variant = "arm64", "v8" }),
			[]types.Changed{{Field: "Created", From: "2024-01-01T00:00:00Z", To: "2024-02-01T00:00:00Z"}, {Field: "Platform", From: "linux/amd64", To: "linux/arm64/v8"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Config(tc.a, tc.b).Changes; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func desc(name string, size int64) ocispec.Descriptor {
	return ocispec.Descriptor{Digest: digest.FromString(name), Size: size}
}

func TestLayersAndSharedPrefix(t *testing.T) {
	b1, b2, a3, c3, c4 := desc("b1", 10), desc("b2", 20), desc("a3", 30), desc("c3", 40), desc("c4", 50)
	for _, tc := range []struct {
		name                   string
		a, b                   []ocispec.Descriptor
		prefix                 int
		shared, added, removed []types.DiffLayer
	}{
		{"the same", []ocispec.Descriptor{b1, b2}, []ocispec.Descriptor{b1, b2}, 2, dl(b1, b2), nil, nil},
		{"a new top", []ocispec.Descriptor{b1, b2, a3}, []ocispec.Descriptor{b1, b2, c3, c4}, 2, dl(b1, b2), dl(c3, c4), dl(a3)},
		{"a new base shares nothing below", []ocispec.Descriptor{b1, a3}, []ocispec.Descriptor{b2, a3}, 0, dl(a3), dl(b2), dl(b1)},
		{"none", nil, []ocispec.Descriptor{b1}, 0, nil, dl(b1), nil},
		{"a layer twice is listed once", []ocispec.Descriptor{b1, b1}, []ocispec.Descriptor{b1}, 1, dl(b1), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SharedPrefix(tc.a, tc.b); got != tc.prefix {
				t.Fatalf("SharedPrefix %d, want %d", got, tc.prefix)
			}
			d := Layers(tc.a, tc.b)
			if !reflect.DeepEqual(d.Shared, tc.shared) || !reflect.DeepEqual(d.Added, tc.added) || !reflect.DeepEqual(d.Removed, tc.removed) {
				t.Fatalf("got shared %v added %v removed %v", d.Shared, d.Added, d.Removed)
			}
		})
	}
}

func dl(ds ...ocispec.Descriptor) []types.DiffLayer {
	var out []types.DiffLayer
	for _, d := range ds {
		out = append(out, layerOf(d))
	}
	return out
}

func TestPullCost(t *testing.T) {
	b1, b2, c3, cfg := desc("b1", 10), desc("b2", 20), desc("c3", 40), desc("cfg", 7)
	for _, tc := range []struct {
		name    string
		have    []ocispec.Descriptor
		layers  []ocispec.Descriptor
		bytes   int64
		missing []types.DiffLayer
		present int
	}{
		{"nothing held", nil, []ocispec.Descriptor{b1, b2, c3}, 77, dl(b1, b2, c3), 0},
		{"the base held", []ocispec.Descriptor{b1, b2}, []ocispec.Descriptor{b1, b2, c3}, 47, dl(c3), 2},
		{"everything held", []ocispec.Descriptor{b1, b2, c3, cfg}, []ocispec.Descriptor{b1, b2, c3}, 0, nil, 3},
		{"a layer twice is downloaded once", nil, []ocispec.Descriptor{b1, b1}, 17, dl(b1), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			has := digests(tc.have)
			pc := PullCost(tc.layers, cfg, func(d digest.Digest) bool { return has[d] })
			if pc.Bytes != tc.bytes || !reflect.DeepEqual(pc.Layers, tc.missing) || pc.Present != tc.present {
				t.Fatalf("got %d bytes, layers %v, %d present", pc.Bytes, pc.Layers, pc.Present)
			}
			if pc.TotalLayers != len(digests(tc.layers)) || (pc.ConfigSize != 0) != !has[cfg.Digest] {
				t.Errorf("%d layers in all, config %d", pc.TotalLayers, pc.ConfigSize)
			}
		})
	}
}

func TestCompareURL(t *testing.T) {
	for _, tc := range []struct {
		from, to, a, b, want string
	}{
		{"https://github.com/o/r", "https://github.com/o/r", "abc", "def", "https://github.com/o/r/compare/abc...def"},
		{"git@github.com:o/r.git", "https://github.com/o/r/tree/main/sub", "abc", "def", "https://github.com/o/r/compare/abc...def"},
		{"git+https://github.com/O/r.git", "https://github.com/O/r/", "v1.0", "v1.1", "https://github.com/O/r/compare/v1.0...v1.1"},
		{"https://gitlab.com/g/sub/p", "https://gitlab.com/g/sub/p/-/tree/main", "a", "b", "https://gitlab.com/g/sub/p/-/compare/a...b"},
		{"https://codeberg.org/o/r", "https://codeberg.org/o/r.git", "a", "b", "https://codeberg.org/o/r/compare/a...b"},
		{"https://gitea.example.com/o/r", "https://gitea.example.com/o/r", "a", "b", "https://gitea.example.com/o/r/compare/a...b"},
		{"github.com/o/r", "https://github.com/o/r", "a", "b", "https://github.com/o/r/compare/a...b"},
		// No link: other repositories, an unknown forge, a revision
		// missing, the same, or one a link could be bent with.
		{"https://github.com/o/r", "https://github.com/o/other", "a", "b", ""},
		{"https://git.example.com/o/r", "https://git.example.com/o/r", "a", "b", ""},
		{"https://github.com/o/r", "https://github.com/o/r", "", "b", ""},
		{"https://github.com/o/r", "https://github.com/o/r", "a", "a", ""},
		{"https://github.com/o/r", "https://github.com/o/r", "a", "b?x=<script>", ""},
		{"https://github.com/o/r", "https://github.com/o/r", "a", "../../evil", ""},
		{"javascript:alert(1)//github.com/o/r", "javascript:alert(1)//github.com/o/r", "a", "b", ""},
		{"https://github.com/o", "https://github.com/o", "a", "b", ""},
		{"", "", "a", "b", ""},
	} {
		if got := CompareURL(tc.from, tc.to, tc.a, tc.b); got != tc.want {
			t.Errorf("CompareURL(%q, %q, %q, %q) = %q, want %q", tc.from, tc.to, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSource(t *testing.T) {
	a := map[string]string{labelSource: "https://github.com/o/r", labelRevision: "abc"}
	b := map[string]string{labelSource: "https://github.com/o/r", labelRevision: "def"}
	d := Source(a, b)
	if d.FromRevision != "abc" || d.ToRevision != "def" || d.CompareURL != "https://github.com/o/r/compare/abc...def" {
		t.Fatalf("got %+v", d)
	}
	long := map[string]string{labelSource: "https://github.com/o/" + string(make([]byte, maxSourceLen))}
	if d := Source(long, long); d.FromRepository != "" || d.CompareURL != "" {
		t.Fatalf("a label over the cap kept: %+v", d)
	}
	if d := Source(nil, nil); *d != (types.SourceDiff{}) {
		t.Fatalf("no labels: %+v", d)
	}
}

func TestSigner(t *testing.T) {
	key := func(fp string, ok bool) types.TrustSignature {
		return types.TrustSignature{KeyFingerprint: fp, Verified: ok}
	}
	cert := types.TrustSignature{Verified: true, SignatureIdentity: image.SignatureIdentity{Signer: &image.SignerIdentity{SubjectAlternativeName: "ci@example.com", CertificateIssuer: "https://issuer.example"}}}
	signed := func(sigs ...types.TrustSignature) *types.Trust {
		return &types.Trust{Decision: "accepted", Signatures: sigs}
	}
	for _, tc := range []struct {
		name       string
		a, b       *types.Trust
		same, diff bool
	}{
		{"neither judged", nil, nil, false, false},
		{"one key", signed(key("SHA256:k1", true)), signed(key("SHA256:k1", true)), true, false},
		{"another key", signed(key("SHA256:k1", true)), signed(key("SHA256:k2", true)), false, true},
		{"a failed signature is no identity", signed(key("SHA256:k1", true)), signed(key("SHA256:k1", true), key("SHA256:k9", false)), true, false},
		{"a certificate", signed(cert), signed(cert), true, false},
		{"unsigned now", signed(cert), &types.Trust{Decision: "rejected"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Signer(tc.a, tc.b)
			if d.Same != tc.same || d.Differs() != tc.diff {
				t.Fatalf("Same %v Differs %v, want %v %v (%q, %q)", d.Same, d.Differs(), tc.same, tc.diff, d.FromIdentity, d.ToIdentity)
			}
		})
	}
	if got := Identity(signed(cert)); got != "ci@example.com (https://issuer.example)" {
		t.Fatalf("Identity %q", got)
	}
}

// The labels are the image author's text: any repository and revision
// give a link on the forge's own host, or none, and never panic.
func FuzzCompareURL(f *testing.F) {
	f.Add("git@github.com:o/r.git", "https://github.com/o/r", "a", "b")
	f.Add("https://gitlab.com/g/p/-/x", "https://gitlab.com/g/p", "v1", "v2")
	f.Add("ssh://[::1]:22/o/r", "github.com/o/r", "", "x")
	f.Fuzz(func(t *testing.T, from, to, a, b string) {
		u := CompareURL(from, to, a, b)
		if u == "" {
			return
		}
		repo, ok := parseRepo(from)
		if !ok || len(u) < len("https://"+repo.host+"/") || u[:len("https://"+repo.host+"/")] != "https://"+repo.host+"/" {
			t.Fatalf("CompareURL(%q, %q, %q, %q) = %q: not on the repository's host", from, to, a, b, u)
		}
	})
}
