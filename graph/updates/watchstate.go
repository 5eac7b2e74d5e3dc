package updates

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/atomicfile"
)

// The watch's state on disk: <data-root>/watch-state.json keeps what the
// watch last REPORTED about each tag, so that a restart (an upgrade, a
// reboot) does not report it again. The watch's events are changes against
// what its consumers were last told — a consumer that notifies on events,
// as Diun does, would otherwise notify again for every tag already
// reported, after every restart (Diun keeps its own bbolt database for
// exactly this).
//
// What is kept: the tagState of every tag with an alarm (outdated, a newer
// version, a moved base) — all nextState reads to tell a change from the
// same state. A tag whose state is the zero value is not listed: a tag the
// watch has never seen starts from the zero value (its registry is derived
// from its name, as the file's entries are), so listing it would change
// nothing, and the file stays as small as the alarms are few. lastOK (the
// last-success gauge) is not kept: nextState does not read it, and a
// round that changes nothing writes nothing (a quiet daemon does not write
// every interval), so a saved time would be older than the last success
// and set off staleness alerts after a restart; the gauge is "since the
// daemon started", absent until a registry's first answer, as before.
//
// When: read once, when the watch first runs (at start with the interval
// set; at the first round when a SIGHUP turns it on later), so the gauges
// count the kept alarms from start-up; written after a round only when the
// kept state changed (a tag reported, cleared, or gone from the store).
// Tags no longer local are dropped by the first round, as from memory.
//
// A state saved long ago (the watch off for a month, the daemon stopped)
// is kept as it is: it is still what the consumers were last told, so a
// tag still outdated for the same digest says nothing, and one that moved
// meanwhile says it once. A state saved on another platform (a data-root
// moved to another machine) is kept too: each tag is checked for the
// platform its image was pulled for (pulledPlatform: its entry in
// the stored index, else its config), which is stored with the image and
// moved with the data-root — the daemon's platform counts only for an
// image that names none, and then a change is a change to report. The
// file records the daemon's platform only so that the log says so. An
// upgrade from a wharf without the file starts from nothing: its first
// round reports once more.
//
// The file is outside input (anyone who can write the data-root can edit
// it): it is read up to watchStateMax, must be version 1, valid JSON with
// nothing after the object and no unknown field, and every entry a tag in
// the form the watch writes it, with valid digests and tags. Anything else
// — unreadable, corrupt, an unknown version, too big, not a regular file —
// is a warning in the log and is ignored: the watch starts from nothing,
// as it did before the file existed, and never fails the start.
// StateFile is the name of the file the watch keeps its state in, under
// the data-root.
const StateFile = "watch-state.json"

const (
	watchStateVersion = 1
	// watchStateMax caps the file read at start: 16 MiB. Only tags with
	// an alarm are listed; a typical entry is 165 bytes (a 40-byte name,
	// a digest, a newer tag: TestWatchStateEntrySize), the longest
	// possible ~1 KiB (a 255-byte name, a 128-byte tag, two digests and
	// three 128-byte tags), so 16 MiB holds ~100,000 typical alarms and
	// ~16,000 of the longest — more than the 50,000 images of the bench,
	// of which few are ever outdated at once. Decoding costs a few times
	// the size, so the cap also bounds what a tampered file costs at start.
	watchStateMax = 16 << 20
)

// Why a watch-state file was ignored (wrapped with the details).
var (
	errWatchStateTooBig   = errors.New("larger than 16 MiB")
	errWatchStateVersion  = errors.New("unknown version")
	errWatchStateCorrupt  = errors.New("corrupt")
	errWatchStateNotAFile = errors.New("not a regular file")
)

// watchStateDoc is the file.
type watchStateDoc struct {
	Version int `json:"version"`
	// Saved is when it was written; Platform the daemon's then
	// (informational: see above).
	Saved    time.Time                `json:"saved"`
	Platform string                   `json:"platform,omitempty"`
	Tags     map[string]watchStateTag `json:"tags"`
}

// watchStateTag is a tagState on disk, without its registry (derived from
// the name on reading).
type watchStateTag struct {
	Outdated     bool   `json:"outdated,omitempty"`
	RemoteDigest string `json:"remoteDigest,omitempty"`
	Newer        string `json:"newer,omitempty"`
	BaseOutdated bool   `json:"baseOutdated,omitempty"`
	BaseCurrent  string `json:"baseCurrent,omitempty"`
}

// watchStateInfo is what a file said besides the tags (for the log).
type watchStateInfo struct {
	Saved    time.Time
	Platform string
}

// kept is the part of the state the file holds: the tags with an alarm.
func kept(state map[string]tagState) map[string]tagState {
	out := make(map[string]tagState)
	for name, st := range state {
		if st.alarm() {
			out[name] = st
		}
	}
	return out
}

// alarm: the state says something is wrong (it differs from a new tag's).
func (st tagState) alarm() bool {
	return st.outdated || st.remoteDigest != "" || st.newer != "" || st.baseOutdated || st.baseCurrent != ""
}

// encodeWatchState is the file's content for state (its tags with an
// alarm; the map's keys sorted by encoding/json, so the same state gives
// the same bytes).
func encodeWatchState(state map[string]tagState, saved time.Time, platform string) ([]byte, error) {
	doc := watchStateDoc{Version: watchStateVersion, Saved: saved.UTC(), Platform: platform, Tags: map[string]watchStateTag{}}
	for name, st := range kept(state) {
		doc.Tags[name] = watchStateTag{Outdated: st.outdated, RemoteDigest: st.remoteDigest, Newer: st.newer, BaseOutdated: st.baseOutdated, BaseCurrent: st.baseCurrent}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if len(b) > watchStateMax {
		return nil, fmt.Errorf("watch state of %d tags is %d bytes: %w", len(doc.Tags), len(b), errWatchStateTooBig)
	}
	return append(b, '\n'), nil
}

// decodeWatchState reads a file's content (at most watchStateMax bytes of
// r are read). The state it returns holds tags with an alarm only.
func decodeWatchState(r io.Reader) (map[string]tagState, watchStateInfo, error) {
	b, err := io.ReadAll(io.LimitReader(r, watchStateMax+1))
	if err != nil {
		return nil, watchStateInfo{}, err
	}
	if len(b) > watchStateMax {
		return nil, watchStateInfo{}, errWatchStateTooBig
	}
	// The version first, alone: a later version may change the rest of
	// the shape, and should be told as such, not as corrupt.
	var v struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, watchStateInfo{}, fmt.Errorf("%w: %w", errWatchStateCorrupt, err)
	}
	if v.Version == nil {
		return nil, watchStateInfo{}, fmt.Errorf("%w: no version", errWatchStateCorrupt)
	}
	if *v.Version != watchStateVersion {
		return nil, watchStateInfo{}, fmt.Errorf("%w %d (this wharfd reads %d)", errWatchStateVersion, *v.Version, watchStateVersion)
	}
	var doc watchStateDoc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, watchStateInfo{}, fmt.Errorf("%w: %w", errWatchStateCorrupt, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, watchStateInfo{}, fmt.Errorf("%w: data after the object", errWatchStateCorrupt)
	}
	state := make(map[string]tagState, len(doc.Tags))
	for name, t := range doc.Tags {
		st, err := tagStateOf(name, t)
		if err != nil {
			return nil, watchStateInfo{}, fmt.Errorf("%w: tag %.300q: %w", errWatchStateCorrupt, name, err)
		}
		if st.alarm() {
			state[name] = st
		}
	}
	return state, watchStateInfo{Saved: doc.Saved, Platform: doc.Platform}, nil
}

// tagStateOf checks one entry: the name as the watch writes it (familiar
// repository:tag, no digest), digests that parse, newer versions that are
// tags, and no digest without its alarm.
func tagStateOf(name string, t watchStateTag) (tagState, error) {
	ref, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return tagState{}, err
	}
	tagged, ok := ref.(reference.NamedTagged)
	if _, digested := ref.(reference.Digested); !ok || digested {
		return tagState{}, errors.New("not a repository:tag")
	}
	if reference.FamiliarName(tagged)+":"+tagged.Tag() != name {
		return tagState{}, errors.New("not in its familiar form")
	}
	for _, d := range []struct {
		v     string
		alarm bool
	}{{t.RemoteDigest, t.Outdated}, {t.BaseCurrent, t.BaseOutdated}} {
		if d.v == "" {
			continue
		}
		if !d.alarm {
			return tagState{}, errors.New("a digest without its alarm")
		}
		if _, err := digest.Parse(d.v); err != nil {
			return tagState{}, err
		}
	}
	if t.Newer != "" {
		parts := strings.Split(t.Newer, ",")
		if len(parts) != 3 || t.Newer == ",," {
			return tagState{}, errors.New("newer is not patch,minor,major")
		}
		for _, p := range parts {
			if p != "" && !imagespec.ValidTag(p) {
				return tagState{}, errors.New("newer names a string that is not a tag")
			}
		}
	}
	return tagState{
		registry: reference.Domain(tagged), outdated: t.Outdated, remoteDigest: t.RemoteDigest,
		newer: t.Newer, baseOutdated: t.BaseOutdated, baseCurrent: t.BaseCurrent,
	}, nil
}

// loadWatchState reads path; a missing file is (nil, nil). A symlink, a
// FIFO or a device is refused before it is opened (a FIFO would block the
// start).
func loadWatchState(path string) (map[string]tagState, watchStateInfo, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, watchStateInfo{}, nil
	}
	if err != nil {
		return nil, watchStateInfo{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, watchStateInfo{}, fmt.Errorf("%w (%s)", errWatchStateNotAFile, fi.Mode().Type())
	}
	if fi.Size() > watchStateMax {
		return nil, watchStateInfo{}, fmt.Errorf("%w (%d bytes)", errWatchStateTooBig, fi.Size())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, watchStateInfo{}, err
	}
	defer f.Close()
	return decodeWatchState(f)
}

// saveWatchState writes the file atomically (atomicfile.WriteFile: a temp
// file beside it, mode 0600, fsync, rename, fsync of the directory): a
// crash leaves the old file or the new one.
func saveWatchState(path string, state map[string]tagState, saved time.Time, platform string) error {
	b, err := encodeWatchState(state, saved, platform)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o600)
}

// sameKept: a and b hold the same tags with an alarm, in the same states.
func sameKept(a, b map[string]tagState) bool {
	return maps.Equal(kept(a), kept(b))
}
