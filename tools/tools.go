//go:build tools

// Package tools pins the programs the tests and the bench run beside wharf,
// each built from its own main package at the version go.mod requires: the
// CNCF registry, cosign, crane and oras (make test), regsync and regctl
// (make bench). One module for all of them lets one go build compile their
// shared dependencies once.
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
	_ "github.com/google/go-containerregistry/cmd/crane"
	_ "github.com/regclient/regclient/cmd/regctl"
	_ "github.com/regclient/regclient/cmd/regsync"
	_ "github.com/sigstore/cosign/v3/cmd/cosign"
	_ "oras.land/oras/cmd/oras"
)
