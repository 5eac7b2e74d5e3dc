package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
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

// List the files under /etc of an image in its registry, without pulling
// it, then print one of them.
func ExampleClient_ImageFiles() {
	c, err := client.New(client.ResolveHost("", client.OSEnvironment()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	opts := client.FilesOptions{Path: "/etc", Recursive: true, Remote: true}
	err = c.ImageFiles(ctx, "alpine:3.20", opts, func(e types.FileEntry, _ []byte) error {
		fmt.Println(e.Type, e.Path, e.Size)
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	opts.Path = "/etc/os-release"
	rc, st, err := c.ImageArchive(ctx, "alpine:3.20", opts) // a tar of the path, as docker cp reads it
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer rc.Close()
	fmt.Println(st.Name, st.Mode, st.LinkTarget)
}
