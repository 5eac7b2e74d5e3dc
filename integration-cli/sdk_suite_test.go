package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// SDKSuite drives wharfd with the Docker Go SDK (github.com/moby/moby/client),
// once at API 1.50 and once pinned to 1.41, as old SDK users are.
type SDKSuite struct {
	suiteFixture
	version string
	d       *Daemon
	regs    *registries
	cli     *client.Client
}

func TestSDKSuite150(t *testing.T) { t.Parallel(); runSuite(t, &SDKSuite{version: "1.50"}) }

func TestSDKSuite141(t *testing.T) { t.Parallel(); runSuite(t, &SDKSuite{version: "1.41"}) }

func (s *SDKSuite) SetUpSuite(c *check.C) {
	s.d = s.startDaemon(c)
	s.regs = s.startRegistries(c)
	var err error
	s.cli, err = client.New(client.WithHost(s.d.Host), client.WithVersion(s.version))
	c.Assert(err, check.IsNil)
	s.closeAtEnd(func() { s.cli.Close() })
}

func sdkCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

func (s *SDKSuite) repo(name string) string {
	return "sdk" + strings.ReplaceAll(s.version, ".", "") + "/" + name
}

func (s *SDKSuite) TestSDKPingVersionInfo(c *check.C) {
	ctx, cancel := sdkCtx()
	defer cancel()
	p, err := s.cli.Ping(ctx, client.PingOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(p.APIVersion, check.Matches, `1\.[0-9]+`)
	c.Assert(p.OSType, check.Equals, "linux")
	v, err := s.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(v.APIVersion, check.Equals, p.APIVersion)
	c.Assert(v.Os, check.Equals, "linux")
	info, err := s.cli.Info(ctx, client.InfoOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(info.Info.DockerRootDir, check.Equals, s.d.Root)
	c.Assert(info.Info.RegistryConfig, check.NotNil)
	c.Assert(info.Info.RegistryConfig.IndexConfigs["docker.io"], check.NotNil)
}

func (s *SDKSuite) TestSDKImportListInspectHistoryTagRemove(c *check.C) {
	ctx, cancel := sdkCtx()
	defer cancel()
	tarb, err := testregistry.RandomTar("f.bin", 128)
	c.Assert(err, check.IsNil)
	ref := s.repo("imported:1")
	rc, err := s.cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(tarb), SourceName: "-"}, ref,
		client.ImageImportOptions{Message: "sdk import", Changes: []string{"LABEL via=sdk"}})
	c.Assert(err, check.IsNil)
	out, err := io.ReadAll(rc)
	rc.Close()
	c.Assert(err, check.IsNil)
	var st struct{ Status string }
	c.Assert(json.Unmarshal(bytes.TrimSpace(out), &st), check.IsNil, check.Commentf("%s", out))
	id := st.Status
	c.Assert(id, check.Matches, `sha256:[0-9a-f]{64}`)

	list, err := s.cli.ImageList(ctx, client.ImageListOptions{Filters: client.Filters{}.Add("reference", s.repo("imported"))})
	c.Assert(err, check.IsNil)
	c.Assert(list.Items, check.HasLen, 1)
	c.Assert(list.Items[0].ID, check.Equals, id)
	c.Assert(list.Items[0].RepoTags, check.DeepEquals, []string{ref})
	c.Assert(list.Items[0].Labels, check.DeepEquals, map[string]string{"via": "sdk"})

	ins, err := s.cli.ImageInspect(ctx, ref)
	c.Assert(err, check.IsNil)
	c.Assert(ins.ID, check.Equals, id)
	c.Assert(ins.Comment, check.Equals, "sdk import")
	c.Assert(ins.RepoTags, check.DeepEquals, []string{ref})
	c.Assert(ins.RootFS.Layers, check.HasLen, 1)

	_, err = s.cli.ImageInspect(ctx, s.repo("nosuch:1"))
	c.Assert(err, check.NotNil)
	c.Assert(err.Error(), check.Matches, `.*No such image: `+regexpQuote(s.repo("nosuch:1"))+`.*`)

	h, err := s.cli.ImageHistory(ctx, ref)
	c.Assert(err, check.IsNil)
	c.Assert(len(h.Items) >= 1, check.Equals, true)
	c.Assert(h.Items[0].ID, check.Equals, id)

	_, err = s.cli.ImageTag(ctx, client.ImageTagOptions{Source: ref, Target: s.repo("tagged:2")})
	c.Assert(err, check.IsNil)
	ins2, err := s.cli.ImageInspect(ctx, s.repo("tagged:2"))
	c.Assert(err, check.IsNil)
	c.Assert(ins2.ID, check.Equals, id)

	rm, err := s.cli.ImageRemove(ctx, s.repo("tagged:2"), client.ImageRemoveOptions{})
	c.Assert(err, check.IsNil)
	c.Assert(rm.Items, check.HasLen, 1)
	c.Assert(rm.Items[0].Untagged, check.Equals, s.repo("tagged:2"))
	rm, err = s.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true})
	c.Assert(err, check.IsNil)
	var deleted []string
	for _, it := range rm.Items {
		if it.Deleted != "" {
			deleted = append(deleted, it.Deleted)
		}
	}
	c.Assert(deleted, check.DeepEquals, []string{id})
}

func (s *SDKSuite) TestSDKSaveLoad(c *check.C) {
	ctx, cancel := sdkCtx()
	defer cancel()
	ref := s.repo("saved:1")
	id := s.d.Import(c, ref)
	rc, err := s.cli.ImageSave(ctx, []string{ref})
	c.Assert(err, check.IsNil)
	archive, err := io.ReadAll(rc)
	rc.Close()
	c.Assert(err, check.IsNil)
	c.Assert(len(archive) > 0, check.Equals, true)

	fresh := StartDaemon(c)
	defer fresh.Stop(c)
	fc, err := client.New(client.WithHost(fresh.Host), client.WithVersion(s.version))
	c.Assert(err, check.IsNil)
	defer fc.Close()
	lr, err := fc.ImageLoad(ctx, bytes.NewReader(archive), client.ImageLoadWithQuiet(true))
	c.Assert(err, check.IsNil)
	out, err := io.ReadAll(lr)
	lr.Close()
	c.Assert(err, check.IsNil)
	c.Assert(string(out), check.Matches, `(?s).*Loaded image: `+regexpQuote(ref)+`.*`)
	ins, err := fc.ImageInspect(ctx, ref)
	c.Assert(err, check.IsNil)
	c.Assert(ins.ID, check.Equals, id)
}

func (s *SDKSuite) TestSDKEvents(c *check.C) {
	ctx, cancel := sdkCtx()
	defer cancel()
	since := time.Now().Add(-time.Second)
	id := s.d.Import(c, s.repo("events:1"))
	until := time.Now().Add(time.Second)
	res := s.cli.Events(ctx, client.EventsListOptions{
		Since:   fmt.Sprint(since.Unix()),
		Until:   fmt.Sprint(until.Unix()),
		Filters: client.Filters{}.Add("type", "image"),
	})
	var actions []string
	for done := false; !done; {
		select {
		case m, ok := <-res.Messages:
			if !ok {
				done = true
				break
			}
			if m.Actor.ID == id {
				actions = append(actions, string(m.Action))
			}
		case err := <-res.Err:
			if err != nil && err != io.EOF {
				c.Fatalf("events: %v", err)
			}
			done = true
		case <-ctx.Done():
			c.Fatalf("events did not end at until")
		}
	}
	c.Assert(strings.Join(actions, ","), check.Matches, `.*import.*`)
}

func (s *SDKSuite) TestSDKLoginPullPushDistributionInspect(c *check.C) {
	ctx, cancel := sdkCtx()
	defer cancel()
	reg := s.regs.token
	_, err := s.cli.RegistryLogin(ctx, client.RegistryLoginOptions{Username: reg.Username, Password: "wrong", ServerAddress: reg.Host})
	c.Assert(err, check.NotNil)
	lr, err := s.cli.RegistryLogin(ctx, client.RegistryLoginOptions{Username: reg.Username, Password: reg.Password, ServerAddress: reg.Host})
	c.Assert(err, check.IsNil)
	c.Assert(lr.Auth.Status, check.Equals, "Login Succeeded")

	a := auth(reg)
	name := reg.Host + "/" + s.repo("pushed")
	id := s.d.Import(c, name+":1")
	push, err := s.cli.ImagePush(ctx, name+":1", client.ImagePushOptions{RegistryAuth: a})
	c.Assert(err, check.IsNil)
	c.Assert(push.Wait(ctx), check.IsNil)

	di, err := s.cli.DistributionInspect(ctx, name+":1", client.DistributionInspectOptions{EncodedRegistryAuth: a})
	c.Assert(err, check.IsNil)
	c.Assert(di.Descriptor.Digest.String(), check.Matches, `sha256:[0-9a-f]{64}`)
	c.Assert(di.Platforms, check.HasLen, 1)

	_, err = s.cli.ImageRemove(ctx, name+":1", client.ImageRemoveOptions{})
	c.Assert(err, check.IsNil)
	pull, err := s.cli.ImagePull(ctx, name+":1", client.ImagePullOptions{RegistryAuth: a})
	c.Assert(err, check.IsNil)
	c.Assert(pull.Wait(ctx), check.IsNil)
	ins, err := s.cli.ImageInspect(ctx, name+":1")
	c.Assert(err, check.IsNil)
	c.Assert(ins.ID, check.Equals, id)
	c.Assert(ins.RepoDigests, check.DeepEquals, []string{name + "@" + di.Descriptor.Digest.String()})

	// Without credentials the pull fails with the registry's answer.
	_, err = s.cli.ImageRemove(ctx, name+":1", client.ImageRemoveOptions{})
	c.Assert(err, check.IsNil)
	pull, err = s.cli.ImagePull(ctx, name+":1", client.ImagePullOptions{})
	if err == nil {
		err = pull.Wait(ctx)
	}
	c.Assert(err, check.NotNil, check.Commentf("pull without credentials succeeded"))
}

func (s *SDKSuite) TestSDKPullPlatformDigestAndAllTags(c *check.C) {
	ctx, cancel := sdkCtx()
	defer cancel()
	reg := s.regs.anon
	pullOK := func(ref string, opts client.ImagePullOptions) {
		res, err := s.cli.ImagePull(ctx, ref, opts)
		c.Assert(err, check.IsNil, check.Commentf("pull %s", ref))
		c.Assert(res.Wait(ctx), check.IsNil, check.Commentf("pull %s", ref))
	}
	inspectID := func(ref string) string {
		ins, err := s.cli.ImageInspect(ctx, ref)
		c.Assert(err, check.IsNil, check.Commentf("inspect %s", ref))
		return ins.ID
	}

	ix := pushIndex(c, reg, s.repo("multi"), "1.0", testregistry.IndexOptions{})
	multi := reg.Host + "/" + s.repo("multi") + ":1.0"
	pullOK(multi, client.ImagePullOptions{Platforms: []ocispec.Platform{{OS: "linux", Architecture: "arm64"}}})
	c.Assert(inspectID(multi), check.Equals, ix.Images[1].ID())

	one := pushImage(c, reg, s.repo("bydigest"), "1.0", testregistry.ImageOptions{})
	byDigest := reg.Host + "/" + s.repo("bydigest") + "@" + one.Manifest.Digest
	pullOK(byDigest, client.ImagePullOptions{})
	c.Assert(inspectID(byDigest), check.Equals, one.ID())

	a := pushImage(c, reg, s.repo("alltags"), "a", testregistry.ImageOptions{})
	b := pushImage(c, reg, s.repo("alltags"), "b", testregistry.ImageOptions{})
	pullOK(reg.Host+"/"+s.repo("alltags"), client.ImagePullOptions{All: true})
	c.Assert(inspectID(reg.Host+"/"+s.repo("alltags")+":a"), check.Equals, a.ID())
	c.Assert(inspectID(reg.Host+"/"+s.repo("alltags")+":b"), check.Equals, b.ID())
}
