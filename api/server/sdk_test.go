package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

// TestDockerGoSDK drives the router with the Docker Go SDK itself (version
// negotiation, JSON shapes, error classes, pull streams), so a shape the
// real client cannot read fails here.
func TestDockerGoSDK(t *testing.T) {
	b := &fakeBackend{
		images: func(types.ImageListOptions) ([]image.Summary, error) {
			return []image.Summary{{ID: "sha256:a", RepoTags: []string{"busybox:latest"}, Size: 7}}, nil
		},
		inspect: func(n string, _ types.InspectOptions) (*types.ImageInspect, error) {
			if n != "busybox" {
				return nil, fmt.Errorf("No such image: %s%.0w", n, errdefs.ErrNotFound)
			}
			return sampleInspect(), nil
		},
		tag: func(string, reference.NamedTagged) error { return nil },
		pull: func(o types.PullOptions, out types.ProgressWriter) error {
			switch o.Ref.Repo().String() {
			case "docker.io/library/missing":
				return fmt.Errorf("manifest unknown%.0w", errdefs.ErrNotFound)
			case "docker.io/library/broken":
				_ = out.WriteMessage(jsonstream.Message{Status: "Pulling fs layer", ID: "abc"})
				return fmt.Errorf("digest mismatch")
			}
			return out.WriteMessage(jsonstream.Message{Status: "Status: Downloaded newer image for busybox:latest"})
		},
	}
	srv := httptest.NewServer(New(b, Options{ServerVersion: "t", Logger: logrus.NewEntry(logrus.New())}))
	defer srv.Close()
	c, err := client.New(client.WithHost("tcp://"+strings.TrimPrefix(srv.URL, "http://")), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	ping, err := c.Ping(ctx, client.PingOptions{})
	if err != nil || ping.APIVersion != "1.55" || ping.OSType != "linux" {
		t.Fatalf("ping %+v %v", ping, err)
	}
	list, err := c.ImageList(ctx, client.ImageListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].RepoTags[0] != "busybox:latest" || list.Items[0].Containers != 0 {
		t.Fatalf("list %+v %v", list, err)
	}
	ins, err := c.ImageInspect(ctx, "busybox")
	if err != nil || ins.ID != "sha256:aaaa" || ins.Descriptor == nil || ins.RepoTags == nil {
		t.Fatalf("inspect %+v %v", ins, err)
	}
	if _, err := c.ImageInspect(ctx, "nope"); !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "No such image: nope") {
		t.Errorf("inspect missing: %v", err)
	}
	if _, err := c.ImageTag(ctx, client.ImageTagOptions{Source: "busybox", Target: "r/x:1"}); err != nil {
		t.Errorf("tag: %v", err)
	}

	resp, err := c.ImagePull(ctx, "busybox", client.ImagePullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Wait(ctx); err != nil {
		t.Errorf("pull: %v", err)
	}
	if _, err := c.ImagePull(ctx, "missing", client.ImagePullOptions{}); !errdefs.IsNotFound(err) {
		t.Errorf("pull missing: %v", err)
	}
	resp, err = c.ImagePull(ctx, "broken", client.ImagePullOptions{})
	if err != nil {
		t.Fatalf("pull broken must start: %v", err)
	}
	if err := resp.Wait(ctx); err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Errorf("pull broken: %v", err)
	}
}
