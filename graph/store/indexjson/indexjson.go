// Package indexjson is the store's index.json, the OCI layout's index,
// derived from the image records: how it is written from the records
// bucket (an entry at a time), how a file on disk is compared with it, and
// the background writer's schedule. It is no longer rewritten by every
// change (that made a tag cost O(n) at any store size): a change marks it
// behind, and the writer rewrites it at most once per IndexDelay (or
// later in a large store: Delay), from one read transaction, atomically.
// graph/store owns the file's generation and the locks around a write.
package indexjson

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/internal/ocilayout"
)

// The annotations of a tagged entry.
const (
	AnnRefName   = ocispec.AnnotationRefName // tag only, e.g. "1.0"
	AnnImageName = "io.containerd.image.name"
)

// Write writes the index.json the records in images (image ID → record
// JSON) call for to w, an entry at a time (ocilayout.IndexWriter);
// scanned counts the bytes read.
func Write(w io.Writer, images *bolt.Bucket, scanned func(n int)) error {
	iw, err := ocilayout.NewIndexWriter(w)
	if err != nil {
		return err
	}
	put := iw.Add
	// Only the fields index.json shows are decoded of each record.
	var r struct {
		Target, Manifest ocispec.Descriptor
		RepoTags         []string
	}
	err = images.ForEach(func(k, b []byte) error {
		scanned(len(k) + len(b))
		r.Target, r.Manifest, r.RepoTags = ocispec.Descriptor{}, ocispec.Descriptor{}, nil
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("graph: image record %s: %w", k, err)
		}
		target := r.Target
		if target.Digest == "" {
			target = r.Manifest
		}
		target.Annotations = nil
		target.Data = nil
		if len(r.RepoTags) == 0 {
			return put(target)
		}
		for _, t := range r.RepoTags {
			d := target
			tag := t
			if i := strings.LastIndex(t, ":"); i > strings.LastIndex(t, "/") {
				tag = t[i+1:]
			}
			d.Annotations = map[string]string{AnnRefName: tag, AnnImageName: t}
			if err := put(d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return iw.Close()
}

// Same reports whether the file at path holds exactly the bytes write
// writes (a missing or unreadable file does not), by hashing both streams.
func Same(path string, write func(io.Writer) error) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	fh := sha256.New()
	if _, err := io.Copy(fh, f); err != nil {
		return false, nil
	}
	wh := sha256.New()
	bw := bufio.NewWriterSize(wh, 64<<10)
	if err := write(bw); err != nil {
		return false, err
	}
	if err := bw.Flush(); err != nil {
		return false, err
	}
	return bytes.Equal(fh.Sum(nil), wh.Sum(nil)), nil
}

// IndexDelay is how long after a change index.json is rewritten: changes
// within it share one write.
const IndexDelay = time.Second

// indexWriteShare bounds the CPU the background writer takes: the delay
// before a rewrite is at least indexWriteShare times the last write's
// duration (one write in ten seconds of changes at 50,000 images, where a
// write takes ~0.5 s, instead of one a second: it was two thirds of the
// daemon's CPU under a stream of tags). maxIndexDelay caps the delay.
const (
	indexWriteShare = 10
	maxIndexDelay   = 30 * time.Second
)

// ErrClosed is what a flush of a closed store returns; the writer stops
// on it.
var ErrClosed = errors.New("graph: store closed")

// Scheduler runs the background writer: flush, a delay after a change.
type Scheduler struct {
	delay time.Duration
	flush func() error
	warn  func(error)
	cost  atomic.Int64 // the last background write's duration, ns (Delay)

	mu     sync.Mutex
	timer  *time.Timer
	closed bool
}

// NewScheduler schedules flush delay (IndexDelay when 0) after a change;
// warn hears of a failed flush, which is retried.
func NewScheduler(delay time.Duration, flush func() error, warn func(error)) *Scheduler {
	if delay <= 0 {
		delay = IndexDelay
	}
	return &Scheduler{delay: delay, flush: flush, warn: warn}
}

// Wrote notes a write's duration, which Delay follows.
func (s *Scheduler) Wrote(took time.Duration) { s.cost.Store(int64(took)) }

// Delay is the delay before the next background write.
func (s *Scheduler) Delay() time.Duration {
	d := s.delay
	if c := indexWriteShare * time.Duration(s.cost.Load()); c > d {
		d = min(c, maxIndexDelay)
	}
	return d
}

// Changed schedules a flush Delay from now, unless one is scheduled
// already or the scheduler is closed.
func (s *Scheduler) Changed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil || s.closed {
		return
	}
	s.timer = time.AfterFunc(s.Delay(), func() {
		s.mu.Lock()
		s.timer = nil
		s.mu.Unlock()
		if err := s.flush(); err != nil && !errors.Is(err, ErrClosed) {
			s.warn(err)
			s.Changed()
		}
	})
}

// Close stops the schedule; it reports false when it was closed already.
func (s *Scheduler) Close() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	return true
}
