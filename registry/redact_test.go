package registry

import (
	"context"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	registrytypes "github.com/moby/moby/api/types/registry"
)

// Login refuses a server address with credentials in it, as a client
// error that does not repeat them (in any case: hosts are lowered on their
// way into messages).
func TestLoginNeverRepeatsServerAddressCredentials(t *testing.T) {
	s := testService(t, ServiceOptions{})
	for _, addr := range []string{"http://leaky:S3CRET@127.0.0.1:5000", "leaky:S3CRET@127.0.0.1:5000", "https://S3CRET@r.example/v2/"} {
		_, err := s.Login(context.Background(), &registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: addr})
		if err == nil || !errdefs.IsInvalidArgument(err) {
			t.Fatalf("%s: %v, want InvalidArgument", addr, err)
		}
		if low := strings.ToLower(err.Error()); strings.Contains(low, "s3cret") || strings.Contains(low, "leaky") {
			t.Errorf("%s: error repeats the credentials: %v", addr, err)
		}
	}
}
