package types

import (
	"fmt"

	"github.com/containerd/errdefs"
)

// NoSuchImage is the not-found error for image name in dockerd's words,
// "No such image: NAME". The words go over the wire: the daemon answers
// them with a 404, the docker CLI and SDKs match on them, and wharf's CLI
// prints them for a name it could not inspect.
func NoSuchImage(name string) error {
	return fmt.Errorf("No such image: %s%.0w", name, errdefs.ErrNotFound)
}
