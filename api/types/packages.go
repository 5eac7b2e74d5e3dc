package types

import (
	"net/http"

	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// PackagesOptions are the query options of GET /wharf/images/{name}/packages:
// which image, local or (Remote) as its registry has it now, with the
// caller's credentials as on inspect.
type PackagesOptions struct {
	Platform    *ocispec.Platform
	Remote      bool
	Auth        *registry.AuthConfig
	Registries  map[string]registry.AuthConfig
	MetaHeaders http.Header
}

// Package types of Package.Type: syft's names, so that a package list
// compares with syft's as it is.
const (
	PackageTypeDeb      = "deb"
	PackageTypeApk      = "apk"
	PackageTypeRpm      = "rpm"
	PackageTypeGoModule = "go-module"
)

// Package is one installed package of an image.
type Package struct {
	Name    string
	Version string
	// Type is one of the PackageType constants.
	Type string
	// Arch is the package's architecture as its database writes it
	// ("amd64", "x86_64", "noarch"), when it has one.
	Arch string `json:",omitempty"`
	// PURL is the package URL (purl-spec), as syft writes it.
	PURL string `json:",omitempty"`
	// Licenses as the database declares them.
	Licenses []string `json:",omitempty"`
	// Locations are the paths in the image the package was read from (a
	// database file, a binary).
	Locations []string `json:",omitempty"`
	// Layer is the digest of the layer that last set the first location.
	Layer string `json:",omitempty"`
}

// Sources of ImagePackages.Source.
const (
	// PackagesFromAttestation: an SBOM attestation attached to the image.
	PackagesFromAttestation = "attestation"
	// PackagesFromDatabases: the package databases and binaries, read
	// through the layer index.
	PackagesFromDatabases = "databases"
)

// ImagePackages is the answer of GET /wharf/images/{name}/packages (JSON).
type ImagePackages struct {
	// Image is the name asked for; Digest the manifest read.
	Image  string
	Digest string
	// Source is PackagesFromAttestation or PackagesFromDatabases.
	Source string
	// Verified is set when an attestation was verified under the
	// signature policy; SignedBy names its identity.
	Verified bool   `json:",omitempty"`
	SignedBy string `json:",omitempty"`
	// Distro is the image's /etc/os-release (ID, VERSION_ID), when read.
	Distro *Distro `json:",omitempty"`
	// Packages sorted by Type, Name, Version.
	Packages []Package
	// BytesRead counts the bytes of layer data read from the registry to
	// answer (0 when every index and file was local or cached).
	BytesRead int64 `json:",omitempty"`
}

// Distro is what /etc/os-release says.
type Distro struct {
	ID        string
	VersionID string `json:",omitempty"`
	Name      string `json:",omitempty"`
}

// PackageChange is one package whose version differs between two images.
type PackageChange struct {
	Name, Type string
	From, To   string
}

// PackagesDiff is the packages section of a diff.
type PackagesDiff struct {
	Added      []Package       `json:",omitempty"`
	Removed    []Package       `json:",omitempty"`
	Upgraded   []PackageChange `json:",omitempty"`
	Downgraded []PackageChange `json:",omitempty"`
}

// Empty reports whether the two lists were the same.
func (d *PackagesDiff) Empty() bool {
	return d == nil || len(d.Added)+len(d.Removed)+len(d.Upgraded)+len(d.Downgraded) == 0
}
