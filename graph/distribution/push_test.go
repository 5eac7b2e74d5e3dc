package distribution

import (
	"strings"
	"testing"

	"github.com/distribution/reference"

	"github.com/wharfproject/wharf/graph/store"
)

func TestMountSources(t *testing.T) {
	repo, _ := reference.ParseNormalizedNamed("127.0.0.1:5000/team/dst")
	d := "@sha256:" + strings.Repeat("a", 64)
	img := &store.ImageRecord{
		RepoDigests: []string{"127.0.0.1:5000/team/src" + d, "127.0.0.1:5000/team/dst" + d, "docker.io/library/busybox" + d},
		RepoTags:    []string{"127.0.0.1:5000/team/dst:1", "127.0.0.1:5000/other:2", "127.0.0.1:5000/team/src:3", "127.0.0.1:5001/elsewhere:1"},
	}
	got := strings.Join(mountSources(repo, img), ",")
	// Same registry only, never the target itself, each once, and only where
	// a RepoDigest says the image is: a local tag ("other") proves nothing.
	if want := "team/src"; got != want {
		t.Fatalf("mountSources = %q, want %q", got, want)
	}
}
