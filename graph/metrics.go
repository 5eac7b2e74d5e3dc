package graph

import "github.com/wharfproject/wharf/graph/distribution"

// TransferObserver is told of pulls and transferred bytes (the daemon's
// metrics; see distribution.Observer).
type TransferObserver = distribution.Observer

// BlobUsage is the store's blob count and bytes on disk now (the metrics'
// store gauges; see store.Store.BlobUsage).
func (s *Store) BlobUsage() (blobs int, bytes int64, err error) { return s.st.BlobUsage() }
