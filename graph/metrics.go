package graph

import (
	"github.com/wharfproject/wharf/graph/contents"
	"github.com/wharfproject/wharf/graph/distribution"
)

// TransferObserver is told of pulls and transferred bytes (the daemon's
// metrics; see distribution.Observer).
type TransferObserver = distribution.Observer

// LayerIndexObserver is told of the layer indexes (graph/contents).
type LayerIndexObserver = contents.Observer
