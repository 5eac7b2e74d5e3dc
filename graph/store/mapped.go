package store

// meta.db is mapped by bbolt, and a page read through the mapping stays in
// wharfd's resident set until the kernel is short of memory: one walk over
// the summaries of 50,000 images left ~100 MiB of the file in RSS, one over
// the records as much again. A walk over a bucket (the list, the check,
// index.json, the scrub) counts what it reads with scanned; past
// mappedBudget since the last release, the mapping's pages are released
// (dropMapped): RSS holds at most about that much of meta.db per walk
// under way, whatever the store's size. The page cache keeps the pages.

import (
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// mappedBudget is the bytes of keys and values a walk reads between two
// releases: 8 MiB of them sit in ~16 MiB of pages (leaves are about half
// full after random inserts).
const mappedBudget = 8 << 20

// seekCost is what scanned counts for one cursor Seek or Get (a leaf page
// and the branches above it, mostly shared with the previous one).
const seekCost = 512

// scanMeter counts the bytes walks read since the last release; budget,
// when not 0, replaces mappedBudget (tests).
type scanMeter struct{ n, budget atomic.Int64 }

// scanned notes n bytes read in the read transaction btx, releasing the
// mapping's pages when the budget is spent.
func (s *Store) scanned(btx *bolt.Tx, n int) {
	budget := s.scan.budget.Load()
	if budget == 0 {
		budget = mappedBudget
	}
	if s.scan.n.Add(int64(n)) < budget {
		return
	}
	s.scan.n.Store(0)
	s.dropMapped(btx)
}
