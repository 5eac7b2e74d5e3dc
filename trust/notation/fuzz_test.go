package notation

import (
	"context"
	"testing"
	"time"

	"github.com/wharfproject/wharf/trust"
)

// FuzzVerify feeds arbitrary bytes to Verify as both envelope types. The
// verifier trusts a CA that signed nothing the fuzzer can see, so nothing
// may verify; and nothing may panic (Verify's recover would turn a panic
// into an Error, so a panic message in Error fails the target too).
func FuzzVerify(f *testing.F) {
	signing := newCA(f, "seed root")
	for _, mt := range []string{jwsType, coseType} {
		env, _ := sign(f, signing, time.Now().Add(time.Hour), imageDigest, mt, time.Hour)
		f.Add(env, mt == coseType)
	}
	f.Add([]byte("{}"), false)
	f.Add([]byte{0xd2, 0x84, 0x40, 0xa0, 0xf6, 0x40}, true)
	trusted := newCA(f, "unrelated root")
	v, err := New(Config{Level: "audit", TrustStore: [][]byte{trusted.pem()}, TrustedIdentities: []string{"*"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte, isCOSE bool) {
		mt := jwsType
		if isCOSE {
			mt = coseType
		}
		fd := v.Verify(context.Background(), trust.Image{Digest: otherDigest}, trust.Artifact{MediaType: mt, Payload: payload})
		if fd.Verified {
			t.Fatalf("random bytes verified: %+v", fd)
		}
		if fd.Error == "" {
			t.Fatalf("no error and not verified: %+v", fd)
		}
		if len(fd.Error) > len("envelope could not be verified: ") && fd.Error[:len("envelope could not be verified: ")] == "envelope could not be verified: " {
			t.Fatalf("Verify recovered from a panic: %s", fd.Error)
		}
	})
}
