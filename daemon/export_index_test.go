package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/graph"
)

func TestSystemExportIndexWritesAndCounts(t *testing.T) {
	root := t.TempDir()
	log := logrus.New()
	log.SetOutput(os.Stderr)
	log.SetLevel(logrus.WarnLevel)
	st, err := graph.New(context.Background(), graph.Options{Root: root, Logger: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := &Daemon{images: st, cfg: &Config{Root: root}}
	// A missing index.json is written by the export (a reader may have
	// removed it; the store's own files are otherwise complete).
	if err := os.Remove(filepath.Join(root, "index.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	rep, err := d.SystemExportIndex(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Path != filepath.Join(root, "index.json") || rep.Entries != 0 {
		t.Fatalf("%+v", rep)
	}
	if _, err := os.Stat(rep.Path); err != nil {
		t.Fatalf("index.json not written: %v", err)
	}
	// A damaged index.json on disk is reported, not counted as 0.
	if err := os.WriteFile(rep.Path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := countIndexEntries(rep.Path); err == nil {
		t.Fatal("a truncated index.json was counted")
	}
}

func TestSystemExportIndexWithoutAFlusherIsNotImplemented(t *testing.T) {
	d := &Daemon{images: &slowStore{}, cfg: &Config{Root: t.TempDir()}}
	if _, err := d.SystemExportIndex(context.Background()); !errdefs.IsNotImplemented(err) {
		t.Fatalf("got %v, want not implemented", err)
	}
}
