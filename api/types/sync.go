package types

import (
	"net/http"

	"github.com/moby/moby/api/types/registry"
)

// SyncOptions are the options of POST /wharf/images/sync (wharf's own, a
// JSON body): mirror whole repositories from one registry to another, each
// image that differs through the one-image copy (CopyOptions).
type SyncOptions struct {
	// Sources are what to mirror: a repository (every tag, or Tags), or a
	// namespace (every repository under it, through the registry's
	// catalog). `wharf sync` makes one from its SOURCE argument or many
	// from a skopeo sync YAML.
	Sources []SyncSource `json:"sources"`
	// Destination is host[/path]: each repository lands under it as
	// path/<last element of the source repository>, or with Scoped as
	// path/<source host>/<source repository>, as skopeo sync names them.
	Destination string `json:"destination"`
	Scoped      bool   `json:"scoped,omitempty"`

	// Filters apply to every source's tags, after the source's own:
	// TagRegex (RE2, anchored by the caller if wanted: skopeo's match is
	// unanchored), Semver (a Masterminds range, ">=1.2 <2", "~1.4"; tags
	// that are not versions never match) and Latest (the N highest by
	// semver order, after the other filters; 0 keeps all).
	TagRegex string `json:"tag_regex,omitempty"`
	Semver   string `json:"semver,omitempty"`
	Latest   int    `json:"latest,omitempty"`

	// Platform (os/arch[/variant]) syncs that platform's manifest of each
	// index; "" syncs every platform and the index byte for byte.
	Platform       string `json:"platform,omitempty"`
	IncludeForeign bool   `json:"include_foreign,omitempty"`
	WithReferrers  bool   `json:"with_referrers,omitempty"`

	// DryRun lists the plan (each image with what it would do: copy or
	// skip) and moves nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// KeepGoing records a failed image and goes on; without it the first
	// failure ends the sync (still with a summary).
	KeepGoing bool `json:"keep_going,omitempty"`
	// RateLimitFloor pauses reads from a source registry whose last
	// answer said fewer than this many requests remain, until its window
	// has passed. 0: never.
	RateLimitFloor int64 `json:"rate_limit_floor,omitempty"`
	// Backup, when set, is a template (Go text/template over SyncBackupData)
	// naming the tag under which a destination tag that would move is kept
	// first: "{{.Tag}}-backup-{{.Digest.Short}}".
	Backup string `json:"backup,omitempty"`

	// Auth and MetaHeaders come from the request's headers, never its body.
	Auth        map[string]registry.AuthConfig `json:"-"`
	MetaHeaders http.Header                    `json:"-"`
}

// SyncSource is one source of a sync.
type SyncSource struct {
	// Repository is host/path: its tags (Tags, or every tag) are synced.
	// When the registry has no repository by that name, the name is taken
	// as a namespace: every repository the catalog lists under it.
	Repository string `json:"repository"`
	// Tags, when set, are the only tags taken (skopeo YAML's images).
	Tags []string `json:"tags,omitempty"`
	// TagRegex and Semver filter this source's tags (skopeo YAML's
	// images-by-tag-regex and images-by-semver), before the global ones.
	TagRegex string `json:"tag_regex,omitempty"`
	Semver   string `json:"semver,omitempty"`
}

// The statuses of a SyncEvent.
const (
	SyncPlanned = "planned" // dry run: would copy
	SyncSkipped = "skipped" // the destination has the digest already
	SyncSynced  = "synced"  // copied
	SyncFailed  = "failed"  // see Step and Class
	SyncPaused  = "paused"  // a registry's rate limit is under the floor
	SyncBackup  = "backup"  // a destination tag that moves was kept under Backup
)

// SyncEvent is one line of the sync stream: one image's outcome (or a
// pause), then, last, one with Summary set.
type SyncEvent struct {
	Status      string `json:"status,omitempty"`
	Source      string `json:"source,omitempty"`      // host/repo:tag
	Destination string `json:"destination,omitempty"` // host/repo:tag
	Digest      string `json:"digest,omitempty"`      // the source's top-level digest
	// DestinationDigest is what the destination tag named before (a
	// planned or synced image whose tag moves; a backup).
	DestinationDigest string `json:"destination_digest,omitempty"`
	// Backup is the tag the previous destination digest was kept under.
	Backup string `json:"backup,omitempty"`
	// Failure of a failed image; Message is the error text for people,
	// Class and Step are for machines.
	Failure *SyncFailure `json:"failure,omitempty"`
	// Copy is what the copy moved (synced images).
	Copy *CopyResult `json:"copy,omitempty"`
	// Registry and Until: a paused registry and when it resumes.
	Registry string `json:"registry,omitempty"`
	Until    string `json:"until,omitempty"`

	Summary *SyncSummary `json:"summary,omitempty"`
}

// SyncFailure is one failed image (or repository, at step "list").
type SyncFailure struct {
	Image string `json:"image"`
	// Step is where it failed: list, resolve-source, resolve-destination,
	// backup or copy.
	Step string `json:"step"`
	// Class is the error's class (errdefs): not-found, unauthorized,
	// denied, invalid-argument, not-implemented, upstream, unavailable,
	// conflict, canceled, timeout, unknown.
	Class   string `json:"class"`
	Message string `json:"message"`
}

// SyncSummary ends the sync stream.
type SyncSummary struct {
	Images  int `json:"images"`  // images selected
	Synced  int `json:"synced"`  // copied
	Skipped int `json:"skipped"` // already at the destination
	Planned int `json:"planned"` // dry run: would copy
	Failed  int `json:"failed"`
	// NotRun counts the images left when a failure without KeepGoing
	// ended the sync.
	NotRun   int           `json:"not_run,omitempty"`
	Backups  int           `json:"backups,omitempty"`
	Failures []SyncFailure `json:"failures,omitempty"`
	// BlobsUploaded and BytesUploaded add up the copies'.
	BlobsUploaded int   `json:"blobs_uploaded"`
	BlobsMounted  int   `json:"blobs_mounted"`
	BlobsExisted  int   `json:"blobs_existed"`
	BytesUploaded int64 `json:"bytes_uploaded"`
}
