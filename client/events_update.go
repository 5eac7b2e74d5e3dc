package client

import (
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
}

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
	if m.TimeNano != 0 {
		e.Time = time.Unix(0, m.TimeNano)
	} else if m.Time != 0 {
		e.Time = time.Unix(m.Time, 0)
	}
	return e, true
}
