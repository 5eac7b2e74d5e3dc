package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/client"
)

// Inspect an image in its registry without pulling it.
func ExampleClient_ImageInspectRemote() {
	c, err := client.New(client.ResolveHost("", client.OSEnvironment()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer c.Close()
	img, _, err := c.ImageInspectRemote(context.Background(), "registry.example.com/team/app:1.4", client.InspectOptions{
		Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"},
		Auth:     &registry.AuthConfig{Username: "u", Password: "p", ServerAddress: "registry.example.com"},
	})
	if client.IsNotFound(err) {
		fmt.Println("no such image")
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(img.Registry, img.Tag, img.Digest, img.Architecture)
}
