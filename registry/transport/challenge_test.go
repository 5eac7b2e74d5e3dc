package transport

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseChallenges(t *testing.T) {
	type ch = Challenge
	p := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		in   []string
		want []ch
	}{
		{[]string{`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/busybox:pull"`},
			[]ch{{Scheme: "bearer", Params: p("realm", "https://auth.docker.io/token", "service", "registry.docker.io", "scope", "repository:library/busybox:pull")}}},
		{[]string{`Basic realm="Registry Realm"`}, []ch{{Scheme: "basic", Params: p("realm", "Registry Realm")}}},
		{[]string{`bearer realm=https://x/token, service=x`}, []ch{{Scheme: "bearer", Params: p("realm", "https://x/token", "service", "x")}}},
		{[]string{`Bearer realm="a\"b\\c"`}, []ch{{Scheme: "bearer", Params: p("realm", `a"b\c`)}}},
		{[]string{`Bearer REALM = "x" , Service="y"`}, []ch{{Scheme: "bearer", Params: p("realm", "x", "service", "y")}}},
		{[]string{`Bearer realm="first",realm="second"`}, []ch{{Scheme: "bearer", Params: p("realm", "first")}}},
		{[]string{`Bearer realm="unterminated`}, []ch{{Scheme: "bearer", Params: p()}}},
		{[]string{`Basic`}, []ch{{Scheme: "basic", Params: p()}}},
		{[]string{``}, nil},
		// Several challenges: headers of their own, or in one header.
		{[]string{`Negotiate`, `Bearer realm="r",service="s"`},
			[]ch{{Scheme: "negotiate", Params: p()}, {Scheme: "bearer", Params: p("realm", "r", "service", "s")}}},
		{[]string{`Negotiate, Bearer realm="r"`}, []ch{{Scheme: "negotiate", Params: p()}, {Scheme: "bearer", Params: p("realm", "r")}}},
		{[]string{`Negotiate YIIFyQYGKwYBBQUCoIIFvTCCBbmg==, Basic realm="x"`},
			[]ch{{Scheme: "negotiate", Params: p(), Token68: "YIIFyQYGKwYBBQUCoIIFvTCCBbmg=="}, {Scheme: "basic", Params: p("realm", "x")}}},
		{[]string{`Digest realm="d", qop="auth,auth-int", nonce="n", Basic realm="b"`},
			[]ch{{Scheme: "digest", Params: p("realm", "d", "qop", "auth,auth-int", "nonce", "n")}, {Scheme: "basic", Params: p("realm", "b")}}},
		{[]string{`Bearer realm="a",, ,service="b", Basic`}, []ch{{Scheme: "bearer", Params: p("realm", "a", "service", "b")}, {Scheme: "basic", Params: p()}}},
		{[]string{`NTLM, Negotiate`}, []ch{{Scheme: "ntlm", Params: p()}, {Scheme: "negotiate", Params: p()}}},
		{[]string{`@@@`}, nil},
	}
	for _, tc := range tests {
		got := ParseChallenges(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseChallenges(%q)\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
	many := strings.Repeat("Negotiate, ", 1000)
	if n := len(ParseChallenges([]string{many})); n != maxChallenges {
		t.Errorf("%d challenges from a header of 1000, want the cap %d", n, maxChallenges)
	}
}

func TestPreferredChallenge(t *testing.T) {
	for _, tc := range []struct {
		in     []string
		scheme string
		ok     bool
	}{
		{[]string{`Negotiate`, `Bearer realm="r"`}, "bearer", true},
		{[]string{`Basic realm="b"`, `Bearer realm="r"`}, "bearer", true},
		{[]string{`Negotiate, Basic realm="b"`}, "basic", true},
		{[]string{`Bearer service="no realm"`, `Basic realm="b"`}, "basic", true},
		{[]string{`Bearer service="no realm"`}, "", false},
		{[]string{`Negotiate`, `NTLM`}, "", false},
		{nil, "", false},
	} {
		c, ok := PreferredChallenge(tc.in)
		if ok != tc.ok || c.Scheme != tc.scheme {
			t.Errorf("PreferredChallenge(%q) = %q %v, want %q %v", tc.in, c.Scheme, ok, tc.scheme, tc.ok)
		}
	}
}

func TestTokenLifetime(t *testing.T) {
	for in, want := range map[string]time.Duration{
		``:                     defaultTokenLifetime,
		`300`:                  300 * time.Second,
		`"300"`:                300 * time.Second,
		`0.5`:                  500 * time.Millisecond,
		`0`:                    defaultTokenLifetime,
		`-5`:                   defaultTokenLifetime,
		`"soon"`:               defaultTokenLifetime,
		`null`:                 defaultTokenLifetime,
		`86400`:                maxTokenLifetime,
		`10000000000`:          maxTokenLifetime, // 317 years: overflowed a Duration
		`9223372036854775807`:  maxTokenLifetime,
		`1e400`:                maxTokenLifetime,
		`-1e400`:               defaultTokenLifetime,
		`3600`:                 time.Hour,
		`43200`:                12 * time.Hour,
		`1e2`:                  100 * time.Second,
		`1e-300`:               defaultTokenLifetime,
		`18446744073709551616`: maxTokenLifetime,
	} {
		if got := tokenLifetime(json.RawMessage(in)); got != want {
			t.Errorf("tokenLifetime(%s) = %s, want %s", in, got, want)
		}
	}
}

// A token whose expires_in would overflow a Duration is kept (until the
// cap), not counted as expired; the lifetime is read from the response.
func TestTokenResponseExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		expiresIn string
		want      time.Time
	}{
		{`10000000000`, now.Add(maxTokenLifetime - tokenExpiryMargin)},
		{`300`, now.Add(300*time.Second - tokenExpiryMargin)},
		{`2`, now.Add(2*time.Second - tokenExpiryMargin)},
	} {
		body := `{"token":"t-` + tc.expiresIn + `","expires_in":` + tc.expiresIn + `}`
		req := httptest.NewRequest(http.MethodGet, "http://auth.example/token", nil)
		f, err := readTokenResponse(&http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(body)), Request: req}, false)
		if err != nil {
			t.Fatal(err)
		}
		c := newTokenCache(time.Minute, nil)
		c.now = func() time.Time { return now }
		c.store("reg.example", schemeBearer, "k", f)
		got, _ := c.tokens.Peek(tokenKey("reg.example", schemeBearer, "k"))
		if got.token != "t-"+tc.expiresIn || !got.until.Equal(tc.want) {
			t.Errorf("expires_in %s: %q until %s, want until %s", tc.expiresIn, got.token, got.until, tc.want)
		}
	}
}
