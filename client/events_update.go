package client

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/wharfproject/wharf/api/types"
)

// Actions of the image events the daemon's watch logs
// (check-remote-interval, docs/updates.md): each is a change of a local
// tag's state.
const (
	// EventOutdated: the tag names another digest than the one pulled.
	EventOutdated = "outdated"
	// EventNewerVersion: a higher version of the tag's shape appeared.
	EventNewerVersion = "newer-version"
	// EventBaseOutdated: the image's base moved for its platform.
	EventBaseOutdated = "base-outdated"
	// EventCurrent: one of the above cleared (UpdateEvent.Cleared).
	EventCurrent = "current"
)

// UpdateEvent is one event of the daemon's watch with its attributes
// named; empty when the event does not carry them.
type UpdateEvent struct {
	Action string
	// Name is the local tag (familiar form), ImageID its image.
	Name, ImageID, Registry, RemoteStatus string
	LocalDigest, RemoteDigest             string
	// Platform and the platform digests: for an index.
	Platform, LocalPlatformDigest, RemotePlatformDigest string
	PlatformChanged                                     *bool
	NewerPatch, NewerMinor, NewerMajor                  string
	BaseName, BaseDigest, BaseCurrentDigest             string
	BaseCurrentPlatformDigest, BasePlatform             string
	// Cleared, for EventCurrent, is the action it clears.
	Cleared string
	Time    time.Time
	// Diff, on EventOutdated and EventNewerVersion, is what changed
	// between the local image and Diff.To (the wharf.diff attribute);
	// nil when the event carries none. PackagesChanged is the
	// packages.changed attribute as sent ("curl 8.5.0-1→8.6.0-1, +jq@1.7").
	Diff            *types.DiffSummary
	PackagesChanged string
}

// maxDiffAttribute caps the wharf.diff attribute decoded (64 KiB): the
// daemon sends at most 16 KiB.
const maxDiffAttribute = 64 << 10

// UpdateEventsFilter selects the watch's events for Events: the image
// events with the four actions.
func UpdateEventsFilter() types.Filters {
	return types.Filters{
		"type":  {"image": true},
		"event": {EventOutdated: true, EventNewerVersion: true, EventBaseOutdated: true, EventCurrent: true},
	}
}

// ParseUpdateEvent reads m as an event of the watch; ok is false for any
// other event.
func ParseUpdateEvent(m types.EventMessage) (UpdateEvent, bool) {
	switch m.Action {
	case EventOutdated, EventNewerVersion, EventBaseOutdated, EventCurrent:
	default:
		return UpdateEvent{}, false
	}
	if m.Type != "image" {
		return UpdateEvent{}, false
	}
	a := m.Actor.Attributes
	e := UpdateEvent{
		Action: string(m.Action), Name: a["name"], ImageID: a["imageID"], Registry: a["registry"], RemoteStatus: a["remoteStatus"],
		LocalDigest: a["localDigest"], RemoteDigest: a["remoteDigest"],
		Platform: a["platform"], LocalPlatformDigest: a["localPlatformDigest"], RemotePlatformDigest: a["remotePlatformDigest"],
		NewerPatch: a["newerPatch"], NewerMinor: a["newerMinor"], NewerMajor: a["newerMajor"],
		BaseName: a["baseName"], BaseDigest: a["baseDigest"], BaseCurrentDigest: a["baseCurrentDigest"],
		BaseCurrentPlatformDigest: a["baseCurrentPlatformDigest"], BasePlatform: a["basePlatform"],
		Cleared: a["cleared"],
	}
	if v, err := strconv.ParseBool(a["platformChanged"]); err == nil {
		e.PlatformChanged = &v
	}
	e.PackagesChanged = a["packages.changed"]
	if d := a["wharf.diff"]; d != "" && len(d) <= maxDiffAttribute {
		var s types.DiffSummary
		if json.Unmarshal([]byte(d), &s) == nil {
			e.Diff = &s
		}
	}
	if m.TimeNano != 0 {
		e.Time = time.Unix(0, m.TimeNano)
	} else if m.Time != 0 {
		e.Time = time.Unix(m.Time, 0)
	}
	return e, true
}
