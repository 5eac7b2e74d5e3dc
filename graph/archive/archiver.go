// Package archive moves images between the store and tar streams: docker
// save / load archives (legacy docker-save, docker 25+ and OCI layouts) and
// rootfs imports. Nothing is ever extracted: archive entries are staged into
// the store by digest, under a lease, and verified against their
// descriptors and DiffIDs before an image is recorded. The layout tar is
// internal/ocilayout's; what clients send compressed is opened under
// internal/decompress's bomb caps.
package archive

import (
	"context"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/internal/decompress"
)

// Archiver loads, saves and imports images into and out of st.
type Archiver struct {
	st       *store.Store
	platform ocispec.Platform
	events   store.EventLogger

	// bombLimit caps decompression of client input; the zero
	// value is the default, tests lower it.
	bombLimit decompress.Limit

	// admitLoad is the signature policy's say on a load (nil: none).
	admitLoad func(context.Context) error
}

// New returns an Archiver on st; platform is the daemon's (the manifest a
// multi-platform archive is recorded by), events may be nil. admitLoad,
// when not nil, is asked before a load reads its archive (the signature
// policy's docker-archive transport); its error refuses the load.
func New(st *store.Store, platform ocispec.Platform, events store.EventLogger, admitLoad func(context.Context) error) *Archiver {
	return &Archiver{st: st, platform: platform, events: events, admitLoad: admitLoad}
}
