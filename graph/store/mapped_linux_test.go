package store

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// mappedRSS is the resident size, in bytes, of this process's mapping of
// path (/proc/self/smaps).
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	must(t, err)
	defer f.Close()
	var rss int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && fields[len(fields)-1] == path
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			must(t, err)
			rss += kb << 10
		}
	}
	must(t, sc.Err())
	return rss
}

// TestWalksReleaseTheMapping: a walk over every summary (the list's first
// pass) leaves at most about mappedBudget of meta.db in the process's
// resident set, where it used to leave every page it read.
func TestWalksReleaseTheMapping(t *testing.T) {
	s := newTestStore(t)
	fillRecords(s, 4000, func(i int) string { return fmt.Sprintf("docker.io/library/img%d:latest", i) })
	path := filepath.Join(s.root, wharfDir, dbFile)
	walk := func() {
		must(t, s.db.View(func(btx *bolt.Tx) error { s.dropMapped(btx); return nil }))
		n := 0
		must(t, s.Summaries(func(*Summary) error { n++; return nil }))
		if n != 4000 {
			t.Fatalf("walked %d summaries", n)
		}
	}
	s.scan.budget.Store(1 << 40) // no release
	walk()
	whole := mappedRSS(t, path)
	const budget = 64 << 10
	s.scan.budget.Store(budget)
	walk()
	released := mappedRSS(t, path)
	t.Logf("meta.db resident after a walk: %d KiB without releases, %d KiB with a 64 KiB budget", whole>>10, released>>10)
	if whole < 1<<20 {
		t.Fatalf("the walk mapped only %d KiB: too small a store to tell", whole>>10)
	}
	// The last budget's pages, the branch and meta pages, and what the
	// background index.json writer reads meanwhile stay: well under a
	// quarter of the file.
	if released > whole/4 {
		t.Fatalf("%d KiB of meta.db resident after the walk (budget %d KiB), %d KiB without releases", released>>10, budget>>10, whole>>10)
	}
}
