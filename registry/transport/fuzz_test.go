package transport

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseChallenges: any WWW-Authenticate values parse without panic into
// at most maxChallenges challenges with lower-case token schemes and
// non-empty lower-case param names; the challenge wharfd answers, written
// out as the 401 is rewritten, parses back to itself.
func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:x:pull"`,
		`Basic realm="r"`,
		`Bearer realm="a\"b", service=x`,
		`Bearer realm="`,
		`=`,
		`Negotiate, Bearer realm="https://r/token"`,
		`Negotiate YIIFyQYGKwYBBQUCoIIFvTCCBbmg==, Basic realm="x"`,
		`NTLM`,
		`Digest realm="x", qop="auth", nonce="n", Bearer realm="y"`,
		`Bearer realm="a",, ,service="b"`,
	} {
		f.Add(s, "")
		f.Add("Negotiate", s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		cs := ParseChallenges([]string{a, b})
		if len(cs) > 2*maxChallenges {
			t.Fatalf("%d challenges", len(cs))
		}
		for _, c := range cs {
			if c.Scheme == "" || c.Scheme != strings.ToLower(c.Scheme) {
				t.Errorf("scheme %q", c.Scheme)
			}
			for k := range c.Params {
				if k == "" || k != strings.ToLower(k) {
					t.Errorf("param name %q from %q %q", k, a, b)
				}
			}
		}
		c, ok := PreferredChallenge([]string{a, b})
		if !ok {
			return
		}
		if c.Scheme != "bearer" && c.Scheme != "basic" {
			t.Fatalf("preferred scheme %q", c.Scheme)
		}
		back := ParseChallenges([]string{c.String()})
		if len(back) != 1 || back[0].Scheme != c.Scheme || !reflect.DeepEqual(back[0].Params, c.Params) {
			t.Errorf("%q → %+v → %q → %+v", a+" | "+b, c, c.String(), back)
		}
	})
}

// FuzzTokenLifetime: whatever expires_in holds, the lifetime is positive
// and at most a day (a huge one once overflowed into "already expired").
func FuzzTokenLifetime(f *testing.F) {
	for _, s := range []string{`300`, `"300"`, `10000000000`, `1e400`, `-1`, `0.001`, `NaN`, `"Infinity"`, `null`, `{}`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d := tokenLifetime(json.RawMessage(s)); d <= 0 || d > maxTokenLifetime {
			t.Errorf("tokenLifetime(%q) = %s", s, d)
		}
	})
}

// FuzzTokenResponse: any token server body parses without panic; a token
// comes back only non-empty and with a lifetime in (0, a day]; a body over
// the cap is the registry's fault (ErrUpstream), never a token.
func FuzzTokenResponse(f *testing.F) {
	for _, s := range []string{
		`{"token":"t","expires_in":300}`,
		`{"access_token":"a","token":"t","expires_in":"60","issued_at":"2026-01-01T00:00:00Z"}`,
		`{"access_token":"a","refresh_token":"r"}`,
		`{"token":""}`,
		`{"token":"t","expires_in":1e400}`,
		`{"token":"t"} trailing`,
		`[]`,
		``,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	req := httptest.NewRequest(http.MethodGet, "https://auth.example/token?scope=repository:a:pull", nil)
	f.Fuzz(func(t *testing.T, body []byte, oauth2 bool) {
		got, err := parseTokenResponse(req, body, oauth2)
		if len(body) > maxTokenBody {
			if !errors.Is(err, ErrUpstream) {
				t.Fatalf("a body of %d bytes: %v, want ErrUpstream", len(body), err)
			}
			return
		}
		if err != nil {
			return
		}
		if got.token == "" || got.lifetime <= 0 || got.lifetime > maxTokenLifetime {
			t.Errorf("%q: token %q lifetime %s", body, got.token, got.lifetime)
		}
	})
}
