package client

import (
	"strings"
	"testing"
)

// TestParseUpdateEvent: the watch's events decode with their attributes;
// other events are not taken for them.
func TestParseUpdateEvent(t *testing.T) {
	in := `{"Type":"image","Action":"outdated","Actor":{"ID":"r/app:1","Attributes":{"name":"r/app:1","imageID":"sha256:1","registry":"r","localDigest":"sha256:a","remoteDigest":"sha256:b","platformChanged":"false"}},"time":1,"timeNano":1000000001}
{"Type":"image","Action":"current","Actor":{"ID":"r/app:1","Attributes":{"name":"r/app:1","cleared":"base-outdated"}}}
{"Type":"image","Action":"pull","Actor":{"ID":"r/app:1","Attributes":{"name":"r/app:1"}}}
{"Type":"container","Action":"outdated","Actor":{"ID":"c","Attributes":{}}}
`
	var got []UpdateEvent
	for m, err := range DecodeEvents(strings.NewReader(in)) {
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := ParseUpdateEvent(m); ok {
			got = append(got, e)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d update events: %+v", len(got), got)
	}
	o := got[0]
	if o.Action != EventOutdated || o.Name != "r/app:1" || o.LocalDigest != "sha256:a" || o.RemoteDigest != "sha256:b" || o.PlatformChanged == nil || *o.PlatformChanged || o.Time.UnixNano() != 1000000001 {
		t.Errorf("outdated: %+v", o)
	}
	if c := got[1]; c.Action != EventCurrent || c.Cleared != EventBaseOutdated || c.PlatformChanged != nil {
		t.Errorf("current: %+v", c)
	}
	f := UpdateEventsFilter()
	if !f["type"]["image"] || len(f["event"]) != 4 {
		t.Errorf("filter %v", f)
	}
}

// An outdated event's summary decodes from its attributes alone; a
// malformed one is left out, not an error.
func TestParseUpdateEventSummary(t *testing.T) {
	in := `{"Type":"image","Action":"outdated","Actor":{"ID":"r/app:1","Attributes":{"name":"r/app:1","packages.changed":"libfoo 1.0-1→1.0-2","pull.bytes":"1200","wharf.diff":"{\"PackagesChanged\":[{\"Name\":\"libfoo\",\"Type\":\"deb\",\"From\":\"1.0-1\",\"To\":\"1.0-2\"}],\"PullBytes\":1200,\"PullLayers\":1,\"FilesChanged\":1,\"To\":\"r/app:1\",\"PackageChanges\":1}"}}}
{"Type":"image","Action":"outdated","Actor":{"ID":"r/app:2","Attributes":{"name":"r/app:2","wharf.diff":"{not json"}}}
`
	var got []UpdateEvent
	for m, err := range DecodeEvents(strings.NewReader(in)) {
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := ParseUpdateEvent(m); ok {
			got = append(got, e)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d events", len(got))
	}
	d := got[0].Diff
	if d == nil || d.PullBytes != 1200 || len(d.PackagesChanged) != 1 || d.PackagesChanged[0].To != "1.0-2" || d.To != "r/app:1" || got[0].PackagesChanged != "libfoo 1.0-1→1.0-2" {
		t.Errorf("summary %+v (%q)", d, got[0].PackagesChanged)
	}
	if got[1].Diff != nil {
		t.Errorf("malformed summary decoded: %+v", got[1].Diff)
	}
}
