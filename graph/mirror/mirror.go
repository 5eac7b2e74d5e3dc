// Package mirror is sync and the air gap: whole repositories mirrored
// registry to registry (POST /wharf/images/sync), and the same selection
// written as an OCI layout tar (the export) or pushed from one (the
// import). Each image moves on graph/distribution's one-image plan, the
// copy's; the layout tar is internal/ocilayout's.
package mirror

import "github.com/wharfproject/wharf/graph/distribution"

// Mirror runs syncs, exports and imports.
type Mirror struct {
	dist *distribution.Service
	// root is the data-root, under whose ingest/ an import extracts its
	// archive; "" refuses imports.
	root string
}

// New returns a Mirror moving images through dist, extracting imports
// under root's ingest/.
func New(dist *distribution.Service, root string) *Mirror {
	return &Mirror{dist: dist, root: root}
}
