//go:build !linux

package store

import bolt "go.etcd.io/bbolt"

// dropMapped is a no-op where madvise(MADV_DONTNEED) is not relied on.
func (s *Store) dropMapped(*bolt.Tx) {}
