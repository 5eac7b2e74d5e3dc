package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"runtime/debug"
	"testing"

	"github.com/wharfproject/wharf/graph/store/migrate"
)

// scanned reads a records document the way the migration does: the
// version and where each record is (scanRecords), in ID order, then each
// record from its place (readRecord).
func scanned(doc []byte) (int, []*ImageRecord, error) {
	version, places, err := migrate.Scan(bytes.NewReader(doc))
	if err != nil {
		return 0, nil, err
	}
	var out []*ImageRecord
	for _, at := range places {
		r, err := readRecord(bytes.NewReader(doc), at)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, r)
	}
	return version, out, nil
}

// unmarshalled reads it as the migration did before (the whole document
// decoded at once), keeping the records with a valid ID.
func unmarshalled(doc []byte) (int, []*ImageRecord, error) {
	var d recordsDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return 0, nil, err
	}
	var out []*ImageRecord
	for _, r := range d.Images {
		if r == nil || r.ID.Validate() != nil {
			continue
		}
		r.RepoTags, r.RepoDigests = nonNil(r.RepoTags), nonNil(r.RepoDigests)
		out = append(out, r)
	}
	return d.Version, out, nil
}

const (
	idA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	idB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var scanDocs = []struct {
	name, doc string
	wantErr   bool
}{
	{name: "compact", doc: `{"version":1,"images":[{"ID":"` + idA + `","RepoTags":["a:1"]},{"ID":"` + idB + `"}]}`},
	{name: "indented", doc: "{\n  \"version\": 1,\n  \"images\": [\n    {\n      \"ID\": \"" + idA + "\"\n    },\n    {\"ID\": \"" + idB + "\", \"RepoDigests\": [\"b@" + idB + "\"]}\n  ]\n}\n"},
	{name: "version last, other keys", doc: `{"images":[{"ID":"` + idA + `"}],"extra":{"x":[1,2]},"version":1}`},
	{name: "null and ID-less records are left out", doc: `{"version":1,"images":[null,{},{"ID":"sha256:short"},{"ID":"` + idA + `"}]}`},
	{name: "images null", doc: `{"version":1,"images":null}`},
	{name: "no images", doc: `{"version":1}`},
	{name: "a second images replaces the first", doc: `{"version":1,"images":[{"ID":"` + idA + `"}],"images":[{"ID":"` + idB + `"}]}`},
	{name: "keys in another case", doc: `{"Version":1,"IMAGES":[{"id":"` + idA + `"}]}`},
	{name: "duplicate ID: both read, the first first", doc: `{"version":1,"images":[{"ID":"` + idA + `","RepoTags":["first:1"]},{"ID":"` + idA + `","RepoTags":["second:1"]}]}`},
	{name: "truncated", doc: `{"version":1,"images":[{"ID":"` + idA + `"}`, wantErr: true},
	{name: "not an object", doc: `[1]`, wantErr: true},
	{name: "images not a list", doc: `{"version":1,"images":{}}`, wantErr: true},
	{name: "a record not an object", doc: `{"version":1,"images":[5]}`, wantErr: true},
}

// The migration's streaming read of images.json finds what decoding the
// whole document found, in ID order, for every shape a file may have.
func TestScanRecordsReadsWhatUnmarshalReads(t *testing.T) {
	for _, tc := range scanDocs {
		t.Run(tc.name, func(t *testing.T) {
			v, got, err := scanned([]byte(tc.doc))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("read %d records of a bad document", len(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wv, want, err := unmarshalled([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			sortByID(want)
			if v != wv || !reflect.DeepEqual(got, want) {
				t.Errorf("version %d, records %+v; want %d, %+v", v, got, wv, want)
			}
		})
	}
}

// sortByID sorts as readV1Records does: by ID, stable.
func sortByID(recs []*ImageRecord) {
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && recs[j].ID < recs[j-1].ID; j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
}

// FuzzScanRecords: whatever images.json holds, the streaming read never
// panics, and a document encoding/json reads whole is read the same.
func FuzzScanRecords(f *testing.F) {
	for _, tc := range scanDocs {
		f.Add(tc.doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		v, got, err := scanned([]byte(doc))
		wv, want, werr := unmarshalled([]byte(doc))
		if werr != nil {
			return // refused or not, the migration then fails or not: no panic is the property
		}
		if err != nil {
			t.Fatalf("encoding/json reads %q, the scan fails: %v", doc, err)
		}
		sortByID(want)
		if v != wv || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: version %d, records %+v; encoding/json: %d, %+v", doc, v, got, wv, want)
		}
	})
}

// The migration lowers the GC target while it runs and puts back the one
// in force (the daemon's own, or GOGC's) when it is done.
func TestMigrationPutsTheGCTargetBack(t *testing.T) {
	root := manyV1Root(t, 3)
	old := debug.SetGCPercent(77)
	defer debug.SetGCPercent(old)
	s := openTestStore(t, root)
	if s.Count() != 3 {
		t.Fatalf("Count = %d", s.Count())
	}
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("after the migration the GC target is %d, want 77 back", got)
	}
}
