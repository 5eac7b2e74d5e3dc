//go:build tools

// Package tools pins syft, the oracle the packages suite compares wharf's
// package lists with (and reads wharf's CycloneDX and SPDX back with
// `syft convert`). It is a module of its own: syft's dependencies would
// otherwise move the registry's and cosign's in tools/go.mod.
package tools

import (
	_ "github.com/anchore/syft/cmd/syft"
)
