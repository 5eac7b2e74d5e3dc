package types

import (
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
)

// ImageIdentity is moby's Identity (API 1.53 on inspect, 1.54 on the
// manifests of GET /images/json) of a local image:
//
//   - Signature: the signatures of the verdict the image was pulled under
//     (Trust.Identity);
//   - Pull: the repositories the image came from or went to, fully
//     qualified ("docker.io/library/alpine"), once each. moby reads them
//     from containerd's distribution-source labels, which pull and push
//     set; wharf records the same two events as RepoDigests, so those
//     names are the list.
//
// Build stays empty: wharfd builds nothing. nil when there is nothing to
// say, as moby leaves Identity out then.
func ImageIdentity(t *Trust, repoDigests []string) *image.Identity {
	id := t.Identity()
	seen := map[string]bool{}
	var pulls []image.PullIdentity
	for _, rd := range repoDigests {
		ref, err := reference.ParseNormalizedNamed(rd)
		if err != nil {
			continue
		}
		name := ref.Name()
		if seen[name] {
			continue
		}
		seen[name] = true
		pulls = append(pulls, image.PullIdentity{Repository: name})
	}
	if len(pulls) == 0 {
		return id
	}
	if id == nil {
		id = &image.Identity{}
	}
	id.Pull = pulls
	return id
}
