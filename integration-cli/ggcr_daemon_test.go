package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/daemon"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/moby/moby/client"
	"gopkg.in/check.v1"
)

// GGCRDaemonSuite drives wharfd with go-containerregistry's pkg/v1/daemon,
// the library ko build --local and skaffold load images through (issue
// 23). Its images say "created":"0001-01-01T00:00:00Z" (as every crane and
// ko image does).
type GGCRDaemonSuite struct {
	suiteFixture
	d *Daemon
}

func TestGGCRDaemonSuite(t *testing.T) { t.Parallel(); runSuite(t, &GGCRDaemonSuite{}) }

func (s *GGCRDaemonSuite) SetUpSuite(c *check.C) {
	s.d = s.startDaemon(c)
}

// daemon.Write, then daemon.Image(…).ConfigFile(): the call ko makes
// after loading. Before, wharfd left Created out of inspect for a zero
// time at API ≥ 1.44 and ggcr failed with `parsing time ""`; moby sends
// the value whenever the config has the field. The docker CLI prints it.
func (s *GGCRDaemonSuite) TestZeroCreatedRoundTrip(c *check.C) {
	cli, err := client.New(client.WithHost(s.d.Host), client.WithHTTPClient(s.d.HTTPClient()), client.WithAPIVersionNegotiation())
	c.Assert(err, check.IsNil)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	img, err := random.Image(1024, 1)
	c.Assert(err, check.IsNil)
	tag, err := name.NewTag("ko.local/app:zero")
	c.Assert(err, check.IsNil)
	_, err = daemon.Write(tag, img, daemon.WithClient(cli), daemon.WithContext(ctx))
	c.Assert(err, check.IsNil)

	got, err := daemon.Image(tag, daemon.WithClient(cli), daemon.WithContext(ctx))
	c.Assert(err, check.IsNil)
	cf, err := got.ConfigFile()
	c.Assert(err, check.IsNil)
	c.Check(cf.Created.IsZero(), check.Equals, true)
	want, err := img.ConfigName()
	c.Assert(err, check.IsNil)
	have, err := got.ConfigName()
	c.Assert(err, check.IsNil)
	c.Check(have, check.Equals, want)

	r := s.d.DockerOK(c, "image", "inspect", "-f", "[{{.Created}}]", "ko.local/app:zero")
	c.Check(strings.TrimSpace(r.Stdout), check.Equals, "[0001-01-01T00:00:00Z]")
}
