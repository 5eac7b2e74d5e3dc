package client

import (
	"context"
	"net/http"
	"net/url"
	"testing"
)

// TestImageCheckRemoteNewerAndBase: the options become newer=1, base=1 and
// base-name=REF, and the new fields of each line reach the caller.
func TestImageCheckRemoteNewerAndBase(t *testing.T) {
	r, c := newRecorder(t, http.StatusOK, "application/x-ndjson",
		`{"Repository":"r/app","Tag":"1.25","RemoteStatus":"current","NewerMinor":"1.27","NewerMajor":"2.0","VersionTag":true,`+
			`"BaseStatus":"outdated","BaseName":"alpine:3.19","BaseDigest":"sha256:a","BaseCurrentDigest":"sha256:b","BasePlatform":"linux/amd64","BaseSource":"annotations"}`+"\n")
	var got []RemoteCheckResult
	err := c.ImageCheckRemote(context.Background(), CheckRemoteOptions{Newer: true, Base: true, BaseName: "alpine:3.19"}, func(res RemoteCheckResult) error {
		got = append(got, res)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery(r.last.URL.RawQuery)
	if q.Get("newer") != "1" || q.Get("base") != "1" || q.Get("base-name") != "alpine:3.19" {
		t.Fatalf("query %q", r.last.URL.RawQuery)
	}
	if len(got) != 1 {
		t.Fatalf("%+v", got)
	}
	res := got[0]
	if v := res.NewerVersions(); len(v) != 2 || v[0] != "1.27" || v[1] != "2.0" || res.VersionTag == nil || !*res.VersionTag {
		t.Errorf("newer %+v", res)
	}
	if !res.BaseOutdated() || res.BaseDigest != "sha256:a" || res.BaseCurrentDigest != "sha256:b" || res.BasePlatform != "linux/amd64" || res.BaseSource != "annotations" {
		t.Errorf("base %+v", res)
	}
	// Without them: none of the parameters.
	if err := c.ImageCheckRemote(context.Background(), CheckRemoteOptions{}, func(RemoteCheckResult) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if r.last.URL.RawQuery != "" {
		t.Errorf("query %q", r.last.URL.RawQuery)
	}
}
