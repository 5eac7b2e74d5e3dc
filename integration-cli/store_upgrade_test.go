package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// StoreUpgradeSuite migrates a data-root written by the previous store
// format's real binaries (wharf/images.json, version 1) to the bbolt store
// (wharf/meta.db) of the binaries under test, and checks that nothing a
// client sees changes (issue 22, "an upgrade path").
type StoreUpgradeSuite struct {
	suiteFixture
	reg *testregistry.Registry
}

func TestStoreUpgradeSuite(t *testing.T) { t.Parallel(); runSuite(t, &StoreUpgradeSuite{}) }

func (s *StoreUpgradeSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
}

// upgradeImage is one image the old binaries stored, by the name a client
// uses for it, with what they showed of it.
type upgradeImage struct {
	ref     string         // tag, or ID for an image with no tag
	inspect map[string]any // GET /images/REF/json
	save    []byte         // GET /images/get?names=REF
	pushed  string         // manifest digest of a push of it ("" when not pushed)
}

// oldWharf runs the old CLI against d.
func oldWharf(c *check.C, bin string, d *Daemon, args ...string) Result {
	r := runCmd(c, nil, d.cliEnv(), bin, append([]string{"-H", d.Host}, args...)...)
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("old wharf: %s\n--- wharfd log (tail) ---\n%s", r, logTail(d)))
	return r
}

// pushDigest pushes ref (which it first tags as repo:tag in the registry)
// and returns the manifest digest the push reported. The tag stays (an
// untag of an image's only tag would remove the image).
func pushDigest(c *check.C, d *Daemon, ref, repo, tag string) string {
	r := d.Req(c, http.MethodPost, "/v1.50/images/"+ref+"/tag?repo="+url.QueryEscape(repo)+"&tag="+tag, nil)
	c.Assert(r.Status, check.Equals, http.StatusCreated, check.Commentf("tag %s as %s:%s: %s", ref, repo, tag, r))
	_, lines := d.Push(c, repo, tag, "")
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("push %s:%s", repo, tag))
	dg, _ := lines.Aux()["Digest"].(string)
	c.Assert(dg, check.Matches, `sha256:[0-9a-f]{64}`, check.Commentf("push %s:%s: %v", repo, tag, lines.Texts()))
	return dg
}

// saveBytes is GET /images/get of refs, in one archive.
func saveBytes(c *check.C, d *Daemon, refs ...string) []byte {
	r := d.Get(c, "/v1.50/images/get?"+url.Values{"names": refs}.Encode())
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("save %v: %s", refs, r))
	return r.Body
}

func listIDsAndTags(c *check.C, d *Daemon) []string {
	var list []struct {
		ID          string `json:"Id"`
		RepoTags    []string
		RepoDigests []string
		Size        int64
	}
	d.Get(c, "/v1.50/images/json?all=1").JSON(c, &list)
	var out []string
	for _, im := range list {
		b, _ := json.Marshal(im)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// TestUpgradeFromPreviousFormat: the previous format's wharfd and wharf
// store several kinds of image (multi-layer OCI and Docker-media-type
// pulls, a pull of a multi-platform index for the host and one for another
// platform, extra tags, a pull by digest only, a loaded archive, an
// import); what they show of each is recorded (inspect JSON, the saved
// archive's bytes, a push's manifest digest). The wharfd under test then
// starts on that data-root: it migrates the records to wharf/meta.db, and
// every image inspects the same, saves the same bytes and pushes the same
// manifest digest; `wharf system check` finds nothing; the old wharfd
// refuses the migrated data-root.
func (s *StoreUpgradeSuite) TestUpgradeFromPreviousFormat(c *check.C) {
	rev, oldD, oldCLI := oldBinaries(c)
	c.Logf("previous store format: %s", rev)
	reg := s.reg.Host

	multi := pushImage(c, s.reg, "upgrade/multi", "1", testregistry.ImageOptions{Layers: 3, LayerSize: 64 << 10, Labels: map[string]string{"kind": "multi"}})
	pushImage(c, s.reg, "upgrade/docker", "1", testregistry.ImageOptions{Docker: true, Layers: 2})
	byDigest := pushImage(c, s.reg, "upgrade/bydigest", "1", testregistry.ImageOptions{Layers: 1, Env: []string{"BY=digest"}})
	pushIndex(c, s.reg, "upgrade/index", "1", testregistry.IndexOptions{})
	pushIndex(c, s.reg, "upgrade/index-arm", "1", testregistry.IndexOptions{Docker: true})
	pushImage(c, s.reg, "upgrade/loaded", "1", testregistry.ImageOptions{Layers: 2, Cmd: []string{"/loaded"}})

	d := NewDaemon(c)
	d.Bin = oldD
	s.killAtEnd(d)
	d.Start(c)

	// With the old binaries: the CLI for pulls, tags, save and load.
	oldWharf(c, oldCLI, d, "pull", reg+"/upgrade/multi:1")
	oldWharf(c, oldCLI, d, "tag", reg+"/upgrade/multi:1", "local/multi:x")
	oldWharf(c, oldCLI, d, "tag", reg+"/upgrade/multi:1", "local/multi:y")
	oldWharf(c, oldCLI, d, "pull", reg+"/upgrade/docker:1")
	oldWharf(c, oldCLI, d, "pull", reg+"/upgrade/bydigest@"+byDigest.Manifest.Digest)
	oldWharf(c, oldCLI, d, "pull", reg+"/upgrade/index:1")
	_, lines := d.Pull(c, reg+"/upgrade/index-arm", "1", "", "platform", "linux/arm64/v8")
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("pull of the arm64 platform"))
	// A loaded archive: saved by the old wharf, removed, loaded back (its
	// record then comes from the archive, without RepoDigests).
	oldWharf(c, oldCLI, d, "pull", reg+"/upgrade/loaded:1")
	tarPath := filepath.Join(c.MkDir(), "loaded.tar")
	oldWharf(c, oldCLI, d, "save", "-o", tarPath, reg+"/upgrade/loaded:1")
	oldWharf(c, oldCLI, d, "rmi", reg+"/upgrade/loaded:1")
	oldWharf(c, oldCLI, d, "load", "-i", tarPath)
	importedID := d.Import(c, "local/imported:1", `LABEL kind=imported`)

	refs := []string{
		reg + "/upgrade/multi:1", "local/multi:x", "local/multi:y",
		reg + "/upgrade/docker:1",
		byDigest.ID(), // untagged: only its digest names it
		reg + "/upgrade/index:1", reg + "/upgrade/index-arm:1",
		reg + "/upgrade/loaded:1",
		"local/imported:1",
	}
	images := make([]*upgradeImage, len(refs))
	for i, ref := range refs {
		images[i] = &upgradeImage{ref: ref}
		if ref != "local/multi:y" { // one push per image is enough
			images[i].pushed = pushDigest(c, d, ref, reg+"/pushed-old/"+pushName(i), "old")
		}
	}
	// Inspect and save after the pushes: their tags are part of it.
	for _, im := range images {
		im.inspect, im.save = d.Inspect(c, im.ref), saveBytes(c, d, im.ref)
	}
	c.Assert(images[0].inspect["Id"], check.Equals, multi.ID())
	c.Assert(images[len(images)-1].inspect["Id"], check.Equals, importedID)
	c.Assert(images[4].inspect["RepoTags"], check.DeepEquals, []any{reg + "/pushed-old/" + pushName(4) + ":old"})
	c.Assert(images[4].inspect["RepoDigests"], check.DeepEquals, []any{reg + "/pushed-old/" + pushName(4) + "@" + byDigest.Manifest.Digest, reg + "/upgrade/bydigest@" + byDigest.Manifest.Digest})
	allSaved := saveBytes(c, d, refs[0], refs[3], refs[7])
	listBefore := listIDsAndTags(c, d)
	d.Stop(c)

	oldIndex := indexEntries(c, d.Root)
	wharfDir := filepath.Join(d.Root, "wharf")
	v1, err := os.ReadFile(filepath.Join(wharfDir, "images.json"))
	c.Assert(err, check.IsNil, check.Commentf("the old wharfd keeps its records in wharf/images.json"))
	c.Assert(fileExists(filepath.Join(wharfDir, "meta.db")), check.Equals, false)

	// The wharfd under test on the same data-root: the migration runs.
	d.Bin = ""
	d.Start(c)
	c.Assert(d.Log(), check.Matches, `(?s).*image records migrated.*`)
	c.Assert(fileExists(filepath.Join(wharfDir, "meta.db")), check.Equals, true)
	kept, err := os.ReadFile(filepath.Join(wharfDir, "images.json.v1"))
	c.Assert(err, check.IsNil)
	c.Assert(bytes.Equal(kept, v1), check.Equals, true, check.Commentf("images.json.v1 is the version-1 file as it was"))
	var stub struct{ Version int }
	c.Assert(json.Unmarshal([]byte(readFile(filepath.Join(wharfDir, "images.json"))), &stub), check.IsNil)
	c.Assert(stub.Version, check.Equals, 2)

	for _, im := range images {
		got := d.Inspect(c, im.ref)
		// Fields this wharfd added since the old commit (Identity, issue 21
		// and API 1.53) are additions, not changes: compare what the old
		// answer had. A field the old answer had and this one lacks still fails.
		for k := range got {
			if _, ok := im.inspect[k]; !ok {
				delete(got, k)
			}
		}
		c.Assert(got, check.DeepEquals, im.inspect, check.Commentf("inspect %s after the migration", im.ref))
		c.Assert(bytes.Equal(saveBytes(c, d, im.ref), im.save), check.Equals, true, check.Commentf("save %s after the migration", im.ref))
	}
	c.Assert(bytes.Equal(saveBytes(c, d, refs[0], refs[3], refs[7]), allSaved), check.Equals, true)
	c.Assert(listIDsAndTags(c, d), check.DeepEquals, listBefore)
	rep, code := systemCheck(c, d)
	c.Assert(code, check.Equals, 0, check.Commentf("system check after the migration:\n%s", rep))
	// index.json, now derived from meta.db, has the entries the old wharf's
	// had (OCI tools see the same layout).
	d.WharfOK(c, "system", "export-index")
	c.Assert(indexEntries(c, d.Root), check.DeepEquals, oldIndex)
	for i, im := range images {
		if im.pushed != "" {
			c.Assert(pushDigest(c, d, im.ref, reg+"/pushed-new/"+pushName(i), "new"), check.Equals, im.pushed, check.Commentf("push %s after the migration", im.ref))
		}
	}
	listAfter := listIDsAndTags(c, d)
	rep, code = systemCheck(c, d)
	c.Assert(code, check.Equals, 0, check.Commentf("system check after the migration:\n%s", rep))
	c.Assert(rep.Problems, check.HasLen, 0)
	c.Assert(rep.Images, check.Equals, len(listBefore))
	d.Stop(c)
	listBefore = listAfter

	// A second start does not migrate again.
	d.Start(c)
	c.Assert(strings.Count(d.Log(), "image records migrated"), check.Equals, 1)
	c.Assert(d.Inspect(c, refs[0])["Id"], check.Equals, multi.ID())
	d.Stop(c)

	// Downgrade refused: the old wharfd will not start on the migrated
	// data-root, and says why.
	d.Bin = oldD
	err = d.StartWithError()
	c.Assert(err, check.NotNil, check.Commentf("the old wharfd started on a migrated data-root\n%s", d.Log()))
	c.Assert(d.Log(), check.Matches, `(?s).*images\.json: unsupported version 2.*`)
	// The refusal changed nothing: the wharfd under test starts as before.
	d.Bin = ""
	d.Start(c)
	c.Assert(listIDsAndTags(c, d), check.DeepEquals, listBefore)
	d.Stop(c)
}

func pushName(i int) string { return "img" + string(rune('a'+i)) }

// indexEntries are index.json's entries as sorted JSON strings (digest,
// media type, size, annotations): the same set whatever the order.
func indexEntries(c *check.C, root string) []string {
	var idx struct{ Manifests []map[string]any }
	b, err := os.ReadFile(filepath.Join(root, "index.json"))
	c.Assert(err, check.IsNil)
	c.Assert(json.Unmarshal(b, &idx), check.IsNil)
	out := make([]string, 0, len(idx.Manifests))
	for _, m := range idx.Manifests {
		e, err := json.Marshal(m)
		c.Assert(err, check.IsNil)
		out = append(out, string(e))
	}
	sort.Strings(out)
	return out
}
