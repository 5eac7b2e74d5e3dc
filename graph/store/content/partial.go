package content

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/opencontainers/go-digest"
)

// Partial downloads. A blob download that fails — the link, a
// cancellation, the daemon killed — keeps the bytes it wrote under
// partial/ALG/ENCODED, named by the digest it is downloading, so the next
// pull of that blob asks the registry only for the rest (Range). They are
// never trusted: the next download hashes them first and verifies the
// whole blob at its end (registry.FetchBlobFrom); a blob whose bytes prove
// wrong (a digest or size mismatch) loses its partial.
//
// The lease of a partial is its modification time: it expires
// PartialTTL after its last byte was written, and the next collection
// (start-up, the end of any operation's lease, `wharf image prune`)
// removes it. Past PartialMaxBytes in all, the least recently written
// partials go first. So a store keeps no orphan byte longer than a day.
const (
	// PartialTTL is containerd's ingest expiry: long enough to retry a
	// failed pull the next morning, short enough that an abandoned one
	// does not hold disk for long.
	PartialTTL = 24 * time.Hour
	// PartialMaxBytes bounds the disk all partials take: 8 GiB holds a
	// failed pull of the largest images in common use (CUDA and ML bases
	// of 5–8 GB compressed) while a full disk stays the user's choice, not
	// wharf's.
	PartialMaxBytes = 8 << 30
	partialDir      = "partial"
)

// PartialPath is where the partial download of d lives.
func (s *Store) PartialPath(d digest.Digest) string {
	return filepath.Join(s.root, partialDir, string(d.Algorithm()), d.Encoded())
}

// OpenPartial opens d's partial download for appending, creating it
// empty; one longer than size, or any when fresh, is emptied. The caller
// makes sure no other Writer has it open.
func (s *Store) OpenPartial(d digest.Digest, size int64, fresh bool) (*Writer, error) {
	p := s.PartialPath(d)
	if err := os.MkdirAll(filepath.Dir(p), DirMode); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, err
	}
	n, err := f.Seek(0, io.SeekEnd)
	if err == nil && (n > size || fresh) {
		if err = f.Truncate(0); err == nil {
			n, err = f.Seek(0, io.SeekStart)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Writer{s: s, f: f, n: n, started: n, partial: true}, nil
}

// KeepAsPartial moves the stored blob d into partial/ as a complete
// partial download: the next pull of d hashes it and downloads nothing.
// Its lease starts now. It reports whether d was moved.
func (s *Store) KeepAsPartial(d digest.Digest) bool {
	if ValidateDigest(d) != nil {
		return false
	}
	p := s.PartialPath(d)
	if err := os.MkdirAll(filepath.Dir(p), DirMode); err != nil {
		return false
	}
	if err := os.Rename(s.Path(d), p); err != nil {
		return false
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	return true
}

// Partial is one partial download on disk.
type Partial struct {
	Path    string
	Digest  digest.Digest // from its name; may not be valid
	Size    int64
	Written time.Time
}

// Partials lists the partial downloads on disk.
func (s *Store) Partials() []Partial {
	var out []Partial
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA512} {
		dir := filepath.Join(s.root, partialDir, string(alg))
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			d := digest.NewDigestFromEncoded(alg, e.Name())
			out = append(out, Partial{Path: filepath.Join(dir, e.Name()), Digest: d, Size: fi.Size(), Written: fi.ModTime()})
		}
	}
	return out
}

// CollectPartials removes the partials not busy (being written) that
// expired (ttl after their last write, or named by no valid digest), then
// the least recently written until the rest fit in max. It returns the
// bytes freed; warn hears of a partial it could not remove.
func (s *Store) CollectPartials(now time.Time, ttl time.Duration, max int64, busy func(digest.Digest) bool, warn func(path string, err error)) int64 {
	ps := s.Partials()
	sort.Slice(ps, func(i, j int) bool { return ps[i].Written.After(ps[j].Written) })
	var kept, freed int64
	for _, p := range ps {
		if busy(p.Digest) {
			kept += p.Size
			continue
		}
		if ValidateDigest(p.Digest) == nil && now.Sub(p.Written) < ttl && kept+p.Size <= max {
			kept += p.Size
			continue
		}
		if err := os.Remove(p.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			warn(p.Path, err)
			continue
		}
		freed += p.Size
	}
	return freed
}

// PartialUsage counts the partial downloads kept and their bytes.
func (s *Store) PartialUsage() (partials int, bytes int64) {
	for _, p := range s.Partials() {
		partials++
		bytes += p.Size
	}
	return partials, bytes
}
