package integration

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
)

// A remote diff asks for the layers it indexes as soon as both manifests
// are read, beside the configs: a registry that holds each config back
// until it has been asked for a top layer answers both. Were the layers
// asked for only after the configs, the configs would wait out the hold
// and the test fail.
func (s *DiffSuite) TestRemoteDiffAsksForTheLayersBesideTheConfigs(c *check.C) {
	v1 := diffImage(c, nil, diffBaseLayer(38), diffTopLayer("1.0-1", "early=one\n"))
	v2 := diffImage(c, nil, diffBaseLayer(38), diffTopLayer("1.1-1", "early=two\n"))
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "dt/early", "1", v1), check.IsNil)
	c.Assert(s.reg.Client().PushImage(ctx, "dt/early", "2", v2), check.IsNil)

	// holdFor bounds the hold: a diff that asks for no layer until its
	// configs answered is still answered, late, and the test then fails.
	const holdFor = 10 * time.Second
	layerAsked := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var heldOut []string // configs answered only because the hold ran out
	configs := map[string]bool{v1.Config.Digest: true, v2.Config.Digest: true}
	tops := map[string]bool{v1.Layers[1].Digest: true, v2.Layers[1].Digest: true}
	front, err := hostile.NewHookProxy(s.reg.DirectURL, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
			return false
		}
		dg := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		switch {
		case tops[dg]:
			once.Do(func() { close(layerAsked) })
		case configs[dg]:
			select {
			case <-layerAsked:
			case <-time.After(holdFor):
				mu.Lock()
				heldOut = append(heldOut, dg)
				mu.Unlock()
			case <-r.Context().Done():
			}
		}
		return false
	}, nil)
	c.Assert(err, check.IsNil)
	defer front.Close()
	r := s.d.WharfIn(c, []byte(s.reg.Password+"\n"), "login", front.Host, "-u", s.reg.Username, "--password-stdin")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))

	d, _ := s.diffJSON(c, "--remote", "--sections", "packages,files", front.Host+"/dt/early:1", front.Host+"/dt/early:2")
	checkPackages(c, d)
	mu.Lock()
	defer mu.Unlock()
	c.Assert(heldOut, check.HasLen, 0, check.Commentf("configs answered before any top layer was asked for: %v", heldOut))
}
