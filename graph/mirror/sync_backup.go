package mirror

import (
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/imagespec"
)

// The backup tag template (--backup): Go's text/template, as regsync's
// backup option, over SyncBackupData. A template is at most
// maxBackupTemplate bytes and must render a valid tag:
// "{{.Tag}}-backup-{{.Digest.Short}}" makes "1.2-backup-3f1c0d2e9a7b".
//
// It is rendered while the request is checked and for every image, with
// no context to stop it, so it must be cheap by construction: it is
// limited to straight-line code (backuptmpl.go: text, fields, methods,
// variables and a few bounded functions; no range, if, with, template,
// define or block), which runs each action once.
const maxBackupTemplate = 1024

// SyncBackupData is what a backup template sees.
type SyncBackupData struct {
	Repository string       // the destination repository, host/path
	Tag        string       // the tag that moves
	Digest     BackupDigest // what it named before
	Date       time.Time    // now, UTC: {{.Date.Format "20060102"}}
}

// BackupDigest is a digest with the short forms a tag can hold.
type BackupDigest digest.Digest

// String is algorithm:hex, which no tag can hold (the colon).
func (d BackupDigest) String() string { return string(d) }

// Algorithm is "sha256".
func (d BackupDigest) Algorithm() string { return string(digest.Digest(d).Algorithm()) }

// Hex is the whole hex part.
func (d BackupDigest) Hex() string { return digest.Digest(d).Encoded() }

// Short is the first 12 hex characters, as docker shortens IDs.
func (d BackupDigest) Short() string {
	h := d.Hex()
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}

type backupTemplate struct{ t *template.Template }

// parseBackupTemplate parses --backup; nil for "".
func parseBackupTemplate(s string) (*backupTemplate, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > maxBackupTemplate {
		return nil, fmt.Errorf("backup template is %d bytes, more than %d%.0w", len(s), maxBackupTemplate, errdefs.ErrInvalidArgument)
	}
	t, err := template.New("backup").Option("missingkey=error").Funcs(backupFuncs).Parse(s)
	if err != nil {
		return nil, fmt.Errorf("backup template: %v%.0w", err, errdefs.ErrInvalidArgument)
	}
	if err := checkBackupTemplate(t); err != nil {
		return nil, err
	}
	bt := &backupTemplate{t: t}
	// Rendered once on a sample, so that a template that can never make a
	// tag fails the request, not every image.
	if _, err := bt.execute(SyncBackupData{Repository: "example.com/repo", Tag: "latest", Digest: BackupDigest(digest.FromString("")), Date: time.Now().UTC()}); err != nil {
		return nil, err
	}
	return bt, nil
}

func (b *backupTemplate) render(it syncItem, d digest.Digest) (string, error) {
	return b.execute(SyncBackupData{Repository: reference.TrimNamed(it.dstName).String(), Tag: it.tag, Digest: BackupDigest(d), Date: time.Now().UTC()})
}

func (b *backupTemplate) execute(data SyncBackupData) (string, error) {
	var sb strings.Builder
	if err := b.t.Execute(&limitedBuilder{sb: &sb, max: 128}, data); err != nil {
		return "", fmt.Errorf("backup template: %v%.0w", err, errdefs.ErrInvalidArgument)
	}
	tag := sb.String()
	if !imagespec.ValidTag(tag) {
		return "", fmt.Errorf("backup template makes %q, which is not a tag%.0w", tag, errdefs.ErrInvalidArgument)
	}
	return tag, nil
}

// limitedBuilder fails a template that writes more than a tag can hold
// (128 bytes), before it writes more.
type limitedBuilder struct {
	sb  *strings.Builder
	max int
}

func (l *limitedBuilder) Write(p []byte) (int, error) {
	if l.sb.Len()+len(p) > l.max {
		return 0, fmt.Errorf("renders more than %d bytes", l.max)
	}
	return l.sb.Write(p)
}
