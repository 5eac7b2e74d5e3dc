package testregistry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func startT(t *testing.T, opts Options) *Registry {
	t.Helper()
	r, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestPushAndFetchInEveryAuthMode(t *testing.T) {
	for _, mode := range []AuthMode{AuthNone, AuthBasic, AuthToken} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := startT(t, Options{Auth: mode})
			c := r.Client()
			img, err := NewImage(ImageOptions{Labels: map[string]string{"a": "b"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.PushImage(ctx, "team/app", "1.0", img); err != nil {
				t.Fatal(err)
			}
			ix, err := NewIndex(IndexOptions{Attestation: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.PushIndex(ctx, "team/multi", "latest", ix); err != nil {
				t.Fatal(err)
			}
			dix, err := NewIndex(IndexOptions{Docker: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.PushIndex(ctx, "team/list", "latest", dix); err != nil {
				t.Fatal(err)
			}
			body, mt, dgst, err := c.GetManifest(ctx, "team/app", "1.0")
			if err != nil {
				t.Fatal(err)
			}
			if dgst != img.Manifest.Digest || mt != MediaTypeOCIManifest || string(body) != string(img.Manifest.Data) {
				t.Fatalf("got %s %s, want %s %s", mt, dgst, MediaTypeOCIManifest, img.Manifest.Digest)
			}
			_, mt, dgst, err = c.GetManifest(ctx, "team/list", "latest")
			if err != nil || dgst != dix.Digest() || mt != MediaTypeDockerList {
				t.Fatalf("list: %v %s %s", err, mt, dgst)
			}
			// 1 image + (2 platforms + attestation + index) + (2 platforms + list);
			// auth modes see an extra 401 per request.
			if n := r.Counter.Count("PUT manifests"); (mode == AuthNone && n != 8) || n < 8 {
				t.Fatalf("counter saw %s", r.Counter.Summary())
			}
			if mode == AuthToken && r.TokenCounter.Count("GET token") == 0 {
				t.Fatalf("no token request counted: %v", r.RequestLog())
			}
			r.ResetCounters()
			if r.Requests() != 0 {
				t.Fatalf("reset left %d", r.Requests())
			}

			if mode != AuthNone {
				anon := &Client{Base: r.URL}
				if _, _, _, err := anon.GetManifest(ctx, "team/app", "1.0"); err == nil {
					t.Fatal("anonymous fetch from an auth registry succeeded")
				}
				bad := &Client{Base: r.URL, Username: r.Username, Password: "wrong"}
				if _, _, _, err := bad.GetManifest(ctx, "team/app", "1.0"); err == nil || !strings.Contains(err.Error(), "401") {
					t.Fatalf("wrong password: %v", err)
				}
			}
		})
	}
}

func TestPullThroughCache(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := startT(t, Options{})
	img, err := NewImage(ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Client().PushImage(ctx, "library/tiny", "latest", img); err != nil {
		t.Fatal(err)
	}
	mirror := startT(t, Options{ProxyRemoteURL: up.DirectURL})
	_, _, dgst, err := mirror.Client().GetManifest(ctx, "library/tiny", "latest")
	if err != nil || dgst != img.Manifest.Digest {
		t.Fatalf("through the mirror: %v %s", err, dgst)
	}
}

func TestStoppedRegistryRefusesConnections(t *testing.T) {
	r := startT(t, Options{})
	r.Stop()
	resp, err := http.Get(r.DirectURL + "/v2/")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("stopped registry answered %s", resp.Status)
	}
}

func TestParseChallenge(t *testing.T) {
	for _, tc := range []struct {
		in, scheme, realm, scope string
	}{
		{`Bearer realm="http://a/token",service="s",scope="repository:x/y:pull,push"`, "Bearer", "http://a/token", "repository:x/y:pull,push"},
		{`Basic realm="wharf-test"`, "Basic", "wharf-test", ""},
		{`Bearer realm=http://a/token,service=s`, "Bearer", "http://a/token", ""},
	} {
		s, p := parseChallenge(tc.in)
		if s != tc.scheme || p["realm"] != tc.realm || p["scope"] != tc.scope {
			t.Errorf("%s: got %s %v", tc.in, s, p)
		}
	}
}

func TestClassNamesRequestKinds(t *testing.T) {
	for _, tc := range [][3]string{
		{"GET", "/v2/", "GET /v2/"},
		{"HEAD", "/v2/a/b/manifests/latest", "HEAD manifests"},
		{"GET", "/v2/a/blobs/sha256:abc", "GET blobs"},
		{"POST", "/v2/a/blobs/uploads/", "POST uploads"},
		{"GET", "/token", "GET token"},
		{"GET", "/v2/a/tags/list", "GET tags"},
	} {
		if got := Class(tc[0], tc[1]); got != tc[2] {
			t.Errorf("Class(%s, %s) = %s, want %s", tc[0], tc[1], got, tc[2])
		}
	}
}

func TestCorruptBlobServesWrongContent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startT(t, Options{})
	img, err := NewImage(ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Client().PushImage(ctx, "c/x", "1", img); err != nil {
		t.Fatal(err)
	}
	if err := r.CorruptBlob(img.Config.Digest); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(r.URL + "/v2/c/x/blobs/" + img.Config.Digest)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := make([]byte, len(img.Config.Data)+1)
	n, _ := io.ReadFull(resp.Body, body)
	if resp.StatusCode != 200 || n != len(img.Config.Data) || string(body[:n]) == string(img.Config.Data) {
		t.Fatalf("registry served %s, %d bytes, equal=%v", resp.Status, n, string(body[:n]) == string(img.Config.Data))
	}
}

// writeSelfSigned writes a certificate and key for 127.0.0.1 into dir.
func writeSelfSigned(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// A registry started with a certificate serves HTTPS, directly and through
// its counting proxy; the connection counter sees TLS and plain clients.
func TestTLSRegistryAndConnCounter(t *testing.T) {
	cert, key := writeSelfSigned(t, t.TempDir())
	r := startT(t, Options{TLSCert: cert, TLSKey: key})
	if !strings.HasPrefix(r.DirectURL, "https://") || !strings.HasPrefix(r.URL, "https://") {
		t.Fatalf("URLs %s %s", r.DirectURL, r.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img, err := NewImage(ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Client().PushImage(ctx, "tls/app", "1", img); err != nil {
		t.Fatal(err)
	}
	cc, err := NewConnCounter(strings.TrimPrefix(r.DirectURL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	get := func(scheme string) (int, error) {
		cl := &http.Client{Transport: insecureTransport(), Timeout: 10 * time.Second}
		defer cl.CloseIdleConnections()
		resp, err := cl.Get(scheme + "://" + cc.Host + "/v2/tls/app/tags/list")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if st, err := get("https"); err != nil || st != http.StatusOK {
		t.Errorf("https through the counter: %d %v", st, err)
	}
	if st, err := get("http"); err == nil && st == http.StatusOK {
		t.Errorf("plain HTTP to a TLS registry answered 200")
	}
	if cc.TLS.Load() != 1 || cc.Plain.Load() != 1 {
		t.Errorf("counted %d TLS and %d plain connections, want 1 and 1", cc.TLS.Load(), cc.Plain.Load())
	}
}
