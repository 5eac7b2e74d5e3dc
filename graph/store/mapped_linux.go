package store

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// dropMapped takes meta.db's pages out of wharfd's resident set
// (MADV_DONTNEED on bbolt's read-only shared mapping): they stay in the
// page cache, and a later read maps them again (a minor fault, no I/O).
// Called inside the read transaction btx, which keeps bbolt from
// remapping the file meanwhile.
func (s *Store) dropMapped(btx *bolt.Tx) {
	info := s.db.Info()
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, info.Data, uintptr(btx.Size()), syscall.MADV_DONTNEED)
}
