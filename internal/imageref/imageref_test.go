package imageref

import (
	"testing"

	"github.com/containerd/errdefs"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, str, named, on string
		short              bool
	}{
		{"busybox", "busybox", "docker.io/library/busybox", "r.example/busybox", true},
		{"library/busybox:1", "library/busybox:1", "docker.io/library/busybox:1", "r.example/library/busybox:1", true},
		{"org/app@sha256:" + hex, "org/app@sha256:" + hex, "docker.io/org/app@sha256:" + hex, "r.example/org/app@sha256:" + hex, true},
		{"localhost:5000/app:1", "localhost:5000/app:1", "localhost:5000/app:1", "localhost:5000/app:1", false},
		{"docker.io/busybox", "docker.io/busybox", "docker.io/library/busybox", "docker.io/library/busybox", false},
	} {
		r, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		on, err := r.On("r.example")
		if err != nil {
			t.Fatal(err)
		}
		if r.String() != tc.str || r.Named().String() != tc.named || on.String() != tc.on || r.Short() != tc.short {
			t.Errorf("%s: %q %q %q %v", tc.in, r, r.Named(), on, r.Short())
		}
	}
	if _, err := Parse("UPPER"); !errdefs.IsInvalidArgument(err) {
		t.Errorf("UPPER: %v", err)
	}
}

const hex = "1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6"

func TestForPull(t *testing.T) {
	for _, tc := range []struct{ from, tag, want string }{
		{"busybox:", "", "busybox"},
		{"busybox:1", "2", "busybox:2"},
		{"busybox:1", "sha256:" + hex, "busybox@sha256:" + hex},
		{"busybox@sha256:" + hex, "2", "busybox@sha256:" + hex},
	} {
		r, err := ForPull(tc.from, tc.tag)
		if err != nil || r.String() != tc.want {
			t.Errorf("%s %s: %q %v, want %q", tc.from, tc.tag, r, err, tc.want)
		}
	}
	if _, err := ForPull("busybox@sha256:"+hex, "bad tag"); !errdefs.IsInvalidArgument(err) {
		t.Errorf("bad tag: %v", err)
	}
	if _, err := ForPull("scratch", ""); !errdefs.IsPermissionDenied(err) || err.Error() != "'scratch' is a reserved name" {
		t.Errorf("scratch: %v", err)
	}
}
