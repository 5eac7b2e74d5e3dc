package main

import (
	"bytes"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

func TestPackagesTableAsSyft(t *testing.T) {
	var b bytes.Buffer
	err := packagesTable(&b, []types.Package{
		{Name: "zlib", Version: "1.3", Type: "rpm"},
		{Name: "bash", Version: "5.2", Type: "deb"},
		{Name: "bash", Version: "5.1", Type: "deb"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "NAME  VERSION  TYPE\nbash  5.1      deb\nbash  5.2      deb\nzlib  1.3      rpm\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := packagesTable(&b, nil); err != nil || b.String() != "No packages discovered\n" {
		t.Fatalf("%v %q", err, b.String())
	}
}
