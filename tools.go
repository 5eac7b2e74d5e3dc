//go:build tools

// This file pins the modules wharf depends on, so that go.mod keeps them while
// the packages that import them are written in parallel.
package wharf

import (
	_ "github.com/containerd/errdefs"
	_ "github.com/coreos/go-systemd/v22/activation"
	_ "github.com/distribution/reference"
	_ "github.com/gofrs/flock"
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/google/go-containerregistry/pkg/v1/layout"
	_ "github.com/gorilla/mux"
	_ "github.com/moby/moby/client"
	_ "github.com/opencontainers/go-digest"
	_ "github.com/sirupsen/logrus"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/cobra/doc"
	_ "golang.org/x/sync/singleflight"
	_ "golang.org/x/term"
	_ "gopkg.in/check.v1"
)
