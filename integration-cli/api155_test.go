package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// The Docker Go SDK suite (sdk_suite_test.go) once more, pinned to API
// 1.55: wharfd's own version, what an SDK of Engine 29.7 negotiates.
func TestSDKSuite155(t *testing.T) { t.Parallel(); runSuite(t, &SDKSuite{version: "1.55"}) }

// API155Suite: what API 1.51–1.55 added for images, through the moby Go
// client pinned to 1.55, curl and the wharf CLI, against the real registry.
// The registry sits behind a hook proxy that can play a misbehaving one
// (a statement served with other bytes) and counts the blob requests.
type API155Suite struct {
	suiteFixture
	reg   *testregistry.Registry
	token *testregistry.Registry // token auth, for credentials
	front *hostile.HookProxy
	d     *Daemon
	cli   *client.Client

	mu       sync.Mutex
	tampered map[string][]byte // blob digest → what the proxy serves instead
	fetched  map[string]int    // blob digest → GETs through the proxy
}

func TestAPI155Suite(t *testing.T) { t.Parallel(); runSuite(t, &API155Suite{}) }

func (s *API155Suite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.token = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	s.tampered, s.fetched = map[string][]byte{}, map[string]int{}
	front, err := hostile.NewHookProxy(s.reg.DirectURL, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
			return false
		}
		dg := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		s.mu.Lock()
		s.fetched[dg]++
		body, ok := s.tampered[dg]
		s.mu.Unlock()
		if !ok {
			return false
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Header().Set("Docker-Content-Digest", dg)
		_, _ = w.Write(body)
		return true
	}, nil)
	c.Assert(err, check.IsNil)
	s.front = front
	s.closeAtEnd(front.Close)
	s.d = s.startDaemon(c)
	s.cli, err = client.New(client.WithHost(s.d.Host), client.WithVersion("1.55"))
	c.Assert(err, check.IsNil)
	s.closeAtEnd(func() { s.cli.Close() })
}

const (
	spdxPredicate       = "https://spdx.dev/Document"
	provenancePredicate = "https://slsa.dev/provenance/v0.2"
)

// buildxImage is an image as `docker buildx build --platform
// linux/amd64,linux/arm64 --sbom=true --provenance=true --push` leaves it:
// an OCI index with two platform manifests and, for the amd64 one, an
// attestation manifest (platform unknown/unknown, vnd.docker.reference.*
// annotations) whose layers are an SPDX SBOM and a SLSA provenance
// statement, each annotated with its in-toto predicate type.
type buildxImage struct {
	index      testregistry.Blob
	amd, arm   *testregistry.Image
	att        *testregistry.Image
	sbom, prov testregistry.Blob
}

func (s *API155Suite) pushBuildx(c *check.C, repo, tag string, sbomBody []byte) *buildxImage {
	return pushBuildxTo(c, s.reg, repo, tag, sbomBody)
}

func pushBuildxTo(c *check.C, reg *testregistry.Registry, repo, tag string, sbomBody []byte) *buildxImage {
	var bx buildxImage
	var err error
	bx.amd, err = testregistry.NewImage(testregistry.ImageOptions{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}})
	c.Assert(err, check.IsNil)
	bx.arm, err = testregistry.NewImage(testregistry.ImageOptions{Platform: ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}})
	c.Assert(err, check.IsNil)
	subject := fmt.Sprintf(`[{"name":"pkg:docker/%s@%s?platform=linux%%2Famd64","digest":{"sha256":"%s"}}]`,
		repo, tag, digest.Digest(bx.amd.Manifest.Digest).Encoded())
	if sbomBody == nil {
		sbomBody = []byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"` + spdxPredicate + `","subject":` + subject +
			`,"predicate":{"spdxVersion":"SPDX-2.3","dataLicense":"CC0-1.0","SPDXID":"SPDXRef-DOCUMENT","name":"sbom",` +
			`"packages":[{"name":"busybox","SPDXID":"SPDXRef-Package-busybox","versionInfo":"1.36.1","downloadLocation":"NOASSERTION"}]}}`)
	}
	bx.sbom = testregistry.NewBlob(testregistry.MediaTypeInToto, sbomBody)
	bx.prov = testregistry.NewBlob(testregistry.MediaTypeInToto, []byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"`+provenancePredicate+`","subject":`+subject+
		`,"predicate":{"builder":{"id":""},"buildType":"https://mobyproject.org/buildkit@v1","metadata":{"buildInvocationID":"x1","completeness":{"parameters":true}}}}`))
	sd, pd := bx.sbom.Descriptor(), bx.prov.Descriptor()
	sd.Annotations = map[string]string{"in-toto.io/predicate-type": spdxPredicate}
	pd.Annotations = map[string]string{"in-toto.io/predicate-type": provenancePredicate}
	cfg := testregistry.NewBlob(testregistry.MediaTypeOCIConfig, []byte(`{"architecture":"unknown","os":"unknown","config":{},"rootfs":{"type":"layers","diff_ids":["`+bx.sbom.Digest+`","`+bx.prov.Digest+`"]}}`))
	mb, err := json.Marshal(ocispec.Manifest{Versioned: specsV2, MediaType: ocispec.MediaTypeImageManifest, Config: cfg.Descriptor(), Layers: []ocispec.Descriptor{sd, pd}})
	c.Assert(err, check.IsNil)
	bx.att = &testregistry.Image{Manifest: testregistry.NewBlob(ocispec.MediaTypeImageManifest, mb), Config: cfg,
		Layers: []testregistry.Blob{bx.sbom, bx.prov}, Platform: ocispec.Platform{OS: "unknown", Architecture: "unknown"}}

	entry := func(img *testregistry.Image) ocispec.Descriptor {
		d := img.Manifest.Descriptor()
		p := img.Platform
		d.Platform = &p
		return d
	}
	att := entry(bx.att)
	att.Annotations = map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": bx.amd.Manifest.Digest}
	ib, err := json.Marshal(ocispec.Index{Versioned: specsV2, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{entry(bx.amd), entry(bx.arm), att}})
	c.Assert(err, check.IsNil)
	bx.index = testregistry.NewBlob(ocispec.MediaTypeImageIndex, ib)

	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := reg.Client()
	for _, img := range []*testregistry.Image{bx.amd, bx.arm, bx.att} {
		c.Assert(cl.PushImage(ctx, repo, "", img), check.IsNil)
	}
	c.Assert(cl.PutManifest(ctx, repo, tag, bx.index), check.IsNil)
	return &bx
}

// attestations is GET /v1.55/images/NAME/attestations?QUERY straight.
func (s *API155Suite) attestations(c *check.C, name, query string) (Response, []image.AttestationStatement) {
	r := s.d.Get(c, "/v1.55/images/"+name+"/attestations?"+query)
	var v []image.AttestationStatement
	if r.Status == http.StatusOK {
		c.Assert(json.Unmarshal(r.Body, &v), check.IsNil, check.Commentf("%s", r.Body))
		c.Assert(v, check.NotNil, check.Commentf("an empty answer is [], not null: %s", r.Body))
	}
	return r, v
}

// sameJSON compares two JSON documents as values (the daemon sends a
// statement compacted).
func sameJSON(c *check.C, got []byte, want []byte) {
	var g, w any
	c.Assert(json.Unmarshal(got, &g), check.IsNil, check.Commentf("%s", got))
	c.Assert(json.Unmarshal(want, &w), check.IsNil)
	c.Assert(reflect.DeepEqual(g, w), check.Equals, true, check.Commentf("got %s\nwant %s", got, want))
}

// checkStatements holds items to bx's two statements in the manifest's
// order, descriptors exactly as the attestation manifest has them.
func checkStatements(c *check.C, items []image.AttestationStatement, bx *buildxImage, withBodies bool) {
	c.Assert(items, check.HasLen, 2, check.Commentf("%+v", items))
	for i, want := range []struct {
		blob testregistry.Blob
		pt   string
	}{{bx.sbom, spdxPredicate}, {bx.prov, provenancePredicate}} {
		it := items[i]
		c.Check(it.PredicateType, check.Equals, want.pt)
		c.Check(it.Descriptor.Digest.String(), check.Equals, want.blob.Digest)
		c.Check(it.Descriptor.Size, check.Equals, int64(len(want.blob.Data)))
		c.Check(it.Descriptor.MediaType, check.Equals, testregistry.MediaTypeInToto)
		c.Check(it.Descriptor.Annotations["in-toto.io/predicate-type"], check.Equals, want.pt)
		if withBodies {
			c.Assert(it.Statement, check.NotNil)
			sameJSON(c, *it.Statement, want.blob.Data)
		} else {
			c.Check(it.Statement, check.IsNil)
		}
	}
}

func (s *API155Suite) TestAttestationsRemoteThenLocal(c *check.C) {
	bx := s.pushBuildx(c, "att/app", "1", nil)
	name := s.front.Host + "/att/app:1"

	// Remote (remote=1): nothing pulled. Without statement=1 no statement
	// blob is fetched.
	s.mu.Lock()
	before := s.fetched[bx.sbom.Digest] + s.fetched[bx.prov.Digest]
	s.mu.Unlock()
	r, items := s.attestations(c, name, "remote=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s\n%s", r, logTail(s.d)))
	checkStatements(c, items, bx, false)
	s.mu.Lock()
	c.Check(s.fetched[bx.sbom.Digest]+s.fetched[bx.prov.Digest], check.Equals, before)
	s.mu.Unlock()
	_, items = s.attestations(c, name, "remote=1&statement=1")
	checkStatements(c, items, bx, true)
	// type= filters; the arm64 manifest has none; an image that is not an
	// index has none.
	_, items = s.attestations(c, name, "remote=1&statement=1&type="+url.QueryEscape(provenancePredicate))
	c.Assert(items, check.HasLen, 1)
	c.Check(items[0].PredicateType, check.Equals, provenancePredicate)
	sameJSON(c, *items[0].Statement, bx.prov.Data)
	r, items = s.attestations(c, name, "remote=1&platform="+platformQuery(ocispec.Platform{OS: "linux", Architecture: "arm64"}))
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Check(items, check.HasLen, 0)
	pushImage(c, s.reg, "att/single", "1", testregistry.ImageOptions{})
	r, items = s.attestations(c, s.front.Host+"/att/single:1", "remote=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Check(items, check.HasLen, 0)
	r, _ = s.attestations(c, s.front.Host+"/att/nothing:1", "remote=1")
	c.Check(r.Status, check.Equals, http.StatusNotFound, check.Commentf("%s", r))

	// Local, after a pull, through the moby Go client pinned to 1.55.
	ctx, cancel := sdkCtx()
	defer cancel()
	_, err := s.cli.ImageAttestations(ctx, name)
	c.Assert(err, check.NotNil, check.Commentf("not pulled yet"))
	c.Check(strings.Contains(err.Error(), "No such image"), check.Equals, true, check.Commentf("%v", err))
	pull, err := s.cli.ImagePull(ctx, name, client.ImagePullOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(pull.Wait(ctx), check.IsNil)
	res, err := s.cli.ImageAttestations(ctx, name)
	c.Assert(err, check.IsNil)
	checkStatements(c, res.Items, bx, false)
	res, err = s.cli.ImageAttestations(ctx, name, client.ImageAttestationsWithStatement())
	c.Assert(err, check.IsNil)
	checkStatements(c, res.Items, bx, true)
	res, err = s.cli.ImageAttestations(ctx, name, client.ImageAttestationsWithPredicateTypes(spdxPredicate), client.ImageAttestationsWithStatement())
	c.Assert(err, check.IsNil)
	c.Assert(res.Items, check.HasLen, 1)
	sameJSON(c, *res.Items[0].Statement, bx.sbom.Data)
	res, err = s.cli.ImageAttestations(ctx, name, client.ImageAttestationsWithPlatform(ocispec.Platform{OS: "linux", Architecture: "arm64"}))
	c.Assert(err, check.IsNil)
	c.Check(res.Items, check.HasLen, 0)
	_, err = s.cli.ImageAttestations(ctx, name, client.ImageAttestationsWithPlatform(ocispec.Platform{OS: "linux", Architecture: "s390x"}))
	c.Check(err, check.NotNil)

	// curl, as a shell user asks.
	out, err := exec.Command("curl", "-sS", "--unix-socket", s.d.Sock,
		"http://wharfd/v1.55/images/"+name+"/attestations?statement=1").CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("%s", out))
	var viaCurl []image.AttestationStatement
	c.Assert(json.Unmarshal(out, &viaCurl), check.IsNil, check.Commentf("%s", out))
	checkStatements(c, viaCurl, bx, true)

	// The wharf CLI.
	table := s.d.WharfOK(c, "attestations", name).Stdout
	c.Check(table, check.Matches, `(?s)PREDICATE TYPE\s+DIGEST\s+SIZE\n`+spdxPredicate+`\s+`+bx.sbom.Digest+`.*`+provenancePredicate+`\s+`+bx.prov.Digest+`.*`)
	js := s.d.WharfOK(c, "attestations", "--remote", "--statement", "--type", provenancePredicate, name).Stdout
	var viaCLI []image.AttestationStatement
	c.Assert(json.Unmarshal([]byte(js), &viaCLI), check.IsNil, check.Commentf("%s", js))
	c.Assert(viaCLI, check.HasLen, 1)
	sameJSON(c, *viaCLI[0].Statement, bx.prov.Data)
}

// A local image of a registry that wants credentials: its attestations are
// read from that registry (a pull keeps no attestation manifest), with the
// credentials the wharf CLI stored for it; without them the daemon says so.
func (s *API155Suite) TestAttestationsLocalWithCredentials(c *check.C) {
	bx := pushBuildxTo(c, s.token, "att/private", "1", nil)
	name := s.token.Host + "/att/private:1"
	login := s.d.WharfIn(c, []byte(s.token.Password+"\n"), "login", s.token.Host, "-u", s.token.Username, "--password-stdin")
	c.Assert(login.ExitCode, check.Equals, 0, check.Commentf("%s", login))
	s.d.WharfOK(c, "pull", name)
	js := s.d.WharfOK(c, "attestations", "--statement", name).Stdout
	var items []image.AttestationStatement
	c.Assert(json.Unmarshal([]byte(js), &items), check.IsNil, check.Commentf("%s", js))
	checkStatements(c, items, bx, true)
	// The bare API sends no credentials: the registry refuses, and the
	// answer is an error, not a partial list.
	r, _ := s.attestations(c, name, "")
	c.Check(r.Status == http.StatusOK, check.Equals, false, check.Commentf("%s", r))
	c.Check(r.Message(), check.Matches, `attestation manifest `+bx.att.Manifest.Digest+`: .*`, check.Commentf("%s", r))
}

// Hostile statements: a registry that serves a statement with other bytes
// (digest mismatch), and one whose statement is larger than wharfd reads.
// Each is a clear error naming the statement, no statement is fetched for
// an oversized answer, and the daemon goes on serving.
func (s *API155Suite) TestAttestationsHostile(c *check.C) {
	bx := s.pushBuildx(c, "att/tampered", "1", nil)
	name := s.front.Host + "/att/tampered:1"
	ctx, cancel := sdkCtx()
	defer cancel()
	pull, err := s.cli.ImagePull(ctx, name, client.ImagePullOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(pull.Wait(ctx), check.IsNil)

	// The same length, other bytes: only the digest tells.
	evil := bytes.Replace(bx.sbom.Data, []byte("busybox"), []byte("evilbox"), -1)
	c.Assert(len(evil), check.Equals, len(bx.sbom.Data))
	s.mu.Lock()
	s.tampered[bx.sbom.Digest] = evil
	s.mu.Unlock()
	for _, q := range []string{"remote=1&statement=1", "statement=1"} {
		r, _ := s.attestations(c, name, q)
		c.Check(r.Status, check.Equals, http.StatusBadGateway, check.Commentf("%s: %s", q, r))
		c.Check(r.Message(), check.Matches, `.*attestation statement `+bx.sbom.Digest+`.*digest mismatch.*`, check.Commentf("%s", q))
	}
	// Without statement=1 nothing of it is read: the listing still works.
	r, items := s.attestations(c, name, "remote=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	checkStatements(c, items, bx, false)

	// 33 MiB of valid JSON, one MiB over the 32 MiB a statement may be.
	big := append([]byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"`+spdxPredicate+`","predicate":{"pad":"`),
		bytes.Repeat([]byte("a"), 33<<20)...)
	big = append(big, `"}}`...)
	bigImg := s.pushBuildx(c, "att/big", "1", big)
	bigName := s.front.Host + "/att/big:1"
	r, items = s.attestations(c, bigName, "remote=1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Check(items, check.HasLen, 2)
	r, _ = s.attestations(c, bigName, "remote=1&statement=1")
	c.Check(r.Status, check.Equals, http.StatusBadGateway, check.Commentf("%s", r))
	c.Check(r.Message(), check.Matches, `attestation statement `+bigImg.sbom.Digest+` is [0-9]+ bytes, more than the 33554432 wharfd reads`)
	s.mu.Lock()
	c.Check(s.fetched[bigImg.sbom.Digest], check.Equals, 0, check.Commentf("an oversized statement must not be fetched"))
	s.mu.Unlock()

	// Still serving.
	c.Assert(s.d.Get(c, "/_ping").Status, check.Equals, http.StatusOK)
	c.Check(strings.Contains(s.d.Log(), "panic"), check.Equals, false, check.Commentf("%s", logTail(s.d)))
}

// What 1.51–1.54 changed, at 1.55 through the moby client and curl, and
// `docker version` (the docker CLI 28 at its own 1.50) seeing 1.55.
func (s *API155Suite) TestVersionIdentityEventsDiskUsage(c *check.C) {
	ctx, cancel := sdkCtx()
	defer cancel()
	v, err := s.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	c.Assert(err, check.IsNil)
	c.Check(v.APIVersion, check.Equals, "1.55")
	c.Check(v.MinAPIVersion, check.Equals, "1.12")
	out := s.d.DockerOK(c, "version", "--format", "{{.Server.APIVersion}} {{.Server.MinAPIVersion}} {{.Client.APIVersion}}").Stdout
	c.Check(strings.TrimSpace(out), check.Equals, "1.55 1.12 1.50")

	pushImage(c, s.reg, "api155/app", "1", testregistry.ImageOptions{})
	name := s.front.Host + "/api155/app:1"
	pull, err := s.cli.ImagePull(ctx, name, client.ImagePullOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(pull.Wait(ctx), check.IsNil)

	// 1.53: Identity on inspect, Pull naming the repository.
	insp, err := s.cli.ImageInspect(ctx, name)
	c.Assert(err, check.IsNil)
	c.Assert(insp.Identity, check.NotNil)
	c.Check(insp.Identity.Pull, check.DeepEquals, []image.PullIdentity{{Repository: s.front.Host + "/api155/app"}})
	// Below 1.53 too (wharf's, issue 21): the docker CLI 28 at 1.50.
	out = s.d.DockerOK(c, "image", "inspect", "-f", "{{range .Identity.Pull}}{{.Repository}}{{end}}", name).Stdout
	c.Check(strings.TrimSpace(out), check.Equals, s.front.Host+"/api155/app")

	// 1.54: identity=1 on the list, on each available image manifest.
	list, err := s.cli.ImageList(ctx, client.ImageListOptions{Manifests: true, Identity: true,
		Filters: make(client.Filters).Add("reference", name)})
	c.Assert(err, check.IsNil)
	c.Assert(list.Items, check.HasLen, 1)
	var withID int
	for _, m := range list.Items[0].Manifests {
		if m.ImageData != nil && m.ImageData.Identity != nil {
			withID++
			c.Check(m.ImageData.Identity.Pull[0].Repository, check.Equals, s.front.Host+"/api155/app")
		}
	}
	c.Check(withID, check.Equals, 1, check.Commentf("%+v", list.Items[0].Manifests))
	r := s.d.Get(c, "/v1.55/images/json?identity=1")
	c.Check(r.Status, check.Equals, http.StatusBadRequest)
	c.Check(r.Message(), check.Equals, "conflicting options: identity requires manifests=1")

	// 1.52/1.53: events as application/jsonl, or what Accept names; no
	// legacy status/id fields from 1.52.
	for _, tc := range []struct{ accept, want string }{
		{"", "application/jsonl"},
		{"application/x-ndjson", "application/x-ndjson"},
		{"application/json-seq", "application/json-seq"},
	} {
		args := []string{"-sS", "-D", "-", "--unix-socket", s.d.Sock}
		if tc.accept != "" {
			args = append(args, "-H", "Accept: "+tc.accept)
		}
		out, err := exec.Command("curl", append(args, "http://wharfd/v1.55/events?since=0&until=1")...).CombinedOutput()
		c.Assert(err, check.IsNil, check.Commentf("%s", out))
		c.Check(strings.Contains(strings.ToLower(string(out)), "content-type: "+tc.want+"\r\n"), check.Equals, true, check.Commentf("%s", out))
	}
	r = s.d.Get(c, "/v1.55/events?since=0&until="+nowUntil())
	c.Assert(r.Status, check.Equals, http.StatusOK)
	c.Check(strings.Contains(string(r.Body), `"Action":"pull"`), check.Equals, true, check.Commentf("%s", r.Body))
	c.Check(strings.Contains(string(r.Body), `"status":`), check.Equals, false, check.Commentf("%s", r.Body))
	r = s.d.Get(c, "/v1.50/events?since=0&until="+nowUntil())
	c.Check(strings.Contains(string(r.Body), `"status":"pull"`), check.Equals, true, check.Commentf("%s", r.Body))

	// 1.52: /system/df's ImageUsage.
	du, err := s.cli.DiskUsage(ctx, client.DiskUsageOptions{Images: true, Verbose: true})
	c.Assert(err, check.IsNil)
	c.Check(du.Images.TotalCount >= 1, check.Equals, true, check.Commentf("%+v", du.Images))
	c.Check(du.Images.TotalSize > 0, check.Equals, true, check.Commentf("%+v", du.Images))
	var found bool
	for _, it := range du.Images.Items {
		found = found || it.ID == insp.ID
	}
	c.Check(found, check.Equals, true)
}

// specsV2 is schemaVersion 2 of manifests and indexes.
var specsV2 = specs.Versioned{SchemaVersion: 2}

// nowUntil is an events until= of this instant, to the nanosecond: every
// event already logged is before it, and the stream ends at once.
func nowUntil() string {
	t := time.Now()
	return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond())
}
