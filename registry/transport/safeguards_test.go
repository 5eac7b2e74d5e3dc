package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// The realm rules: which realms a registry may send a client to.
func TestValidateRealm(t *testing.T) {
	old := lookupIPAddr
	defer func() { lookupIPAddr = old }()
	lookupIPAddr = func(_ context.Context, host string) ([]net.IPAddr, error) {
		switch host {
		case "metadata.example":
			return []net.IPAddr{{IP: net.ParseIP("169.254.169.254")}}, nil
		case "auth.example":
			return []net.IPAddr{{IP: net.ParseIP("203.0.113.7")}}, nil
		}
		return nil, errors.New("no such host")
	}
	https := &url.URL{Scheme: "https", Host: "reg.example"}
	plain := &url.URL{Scheme: "http", Host: "reg.example:5000"}
	local := &url.URL{Scheme: "http", Host: "localhost:5000"}
	for _, tc := range []struct {
		name     string
		realm    string
		registry *url.URL
		prefixes []netip.Prefix
		ok       bool
	}{
		{"https realm on another host", "https://auth.example/token", https, nil, true},
		{"http realm from an https registry", "http://auth.example/token", https, nil, false},
		{"http realm from an https registry, same host", "http://reg.example/token", https, nil, false},
		{"http realm from a plain-http registry", "http://auth.example/token", plain, nil, true},
		{"another scheme", "ftp://auth.example/token", https, nil, false},
		{"unparsable", "https://[::1", https, nil, false},
		{"link-local metadata address", "https://169.254.169.254/token", https, nil, false},
		{"metadata behind NAT64", "https://[64:ff9b::a9fe:a9fe]/token", https, nil, false},
		{"name resolving to metadata", "https://metadata.example/token", https, nil, false},
		{"loopback realm of a remote registry", "https://127.0.0.1:5001/token", https, nil, false},
		{"loopback realm of a loopback registry", "http://127.0.0.1:5001/token", local, LoopbackRealmPrefixes(), true},
		{"metadata realm of a loopback registry", "http://169.254.169.254/token", local, LoopbackRealmPrefixes(), false},
		{"the registry's own host", "http://localhost:5001/token", local, nil, true},
		{"a name that does not resolve", "https://nowhere.example/token", https, nil, true},
		{"private address", "https://10.0.0.1/token", https, nil, true},
	} {
		prefixes := tc.prefixes
		if prefixes == nil {
			prefixes = DefaultBlockedRealmPrefixes()
		}
		err := validateRealm(context.Background(), tc.realm, tc.registry, prefixes)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %q from %s: %v, want ok=%v", tc.name, tc.realm, tc.registry, err, tc.ok)
		}
	}
}

// seen records what one server received, per path.
type seen struct {
	mu   sync.Mutex
	auth map[string][]string // path → Authorization of each request
	body map[string][]string
}

func (s *seen) add(r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth == nil {
		s.auth, s.body = map[string][]string{}, map[string][]string{}
	}
	s.auth[r.URL.Path] = append(s.auth[r.URL.Path], r.Header.Get("Authorization"))
	s.body[r.URL.Path] = append(s.body[r.URL.Path], string(b))
}

func (s *seen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for p, as := range s.auth {
		b.WriteString(p + ":" + strings.Join(as, ",") + " " + strings.Join(s.body[p], ",") + ";")
	}
	return b.String()
}

// Credentials go to the registry host they belong to, and to the realm
// that host named only as the basic-to-token exchange; never along a
// redirect to another origin, never to another host's realm.
func TestCredentialsGoOnlyWhereTheyBelong(t *testing.T) {
	const user, pass, refresh = "alice", "s3cret", "refresh-me"
	for _, tc := range []struct {
		name string
		// registry and realm handlers; other is a third origin
		reg, realm func(s servers, w http.ResponseWriter, r *http.Request)
		cred       Credential
		wantErr    bool
		check      func(t *testing.T, reg, realm, other *seen)
	}{
		{
			name: "basic-to-token exchange at the realm the registry named",
			reg:  bearerRegistry, realm: tokenServer, cred: Credential{Username: user, Password: pass},
			check: func(t *testing.T, reg, realm, other *seen) {
				if got := realm.auth["/token"]; len(got) != 1 || !strings.HasPrefix(got[0], "Basic ") {
					t.Errorf("realm got %q, want the basic exchange once", got)
				}
				for _, a := range reg.auth["/v2/team/app/manifests/1"] {
					if strings.HasPrefix(a, "Basic") {
						t.Errorf("the registry got the password: %q", a)
					}
				}
			},
		},
		{
			name: "no Authorization on a redirect to a blob store",
			reg: func(s servers, w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") == "" {
					basicChallenge(w)
					return
				}
				http.Redirect(w, r, s.other.URL+"/blob", http.StatusTemporaryRedirect)
			},
			cred: Credential{Username: user, Password: pass},
			check: func(t *testing.T, reg, realm, other *seen) {
				if got := other.auth["/blob"]; len(got) != 1 || got[0] != "" {
					t.Errorf("blob store got %q, want one request without Authorization", got)
				}
			},
		},
		{
			name: "a 401 from a redirect's target gets no credentials",
			reg: func(s servers, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, s.other.URL+"/v2/team/app/manifests/1", http.StatusTemporaryRedirect)
			},
			cred: Credential{Username: user, Password: pass},
			check: func(t *testing.T, reg, realm, other *seen) {
				if got := other.auth["/v2/team/app/manifests/1"]; len(got) != 1 || got[0] != "" {
					t.Errorf("the other origin got %q, want one request, no credentials", got)
				}
				if len(realm.auth) != 0 {
					t.Errorf("a token was fetched: %s", realm.all())
				}
			},
		},
		{
			name: "a token request redirected off its origin loses Authorization",
			reg:  bearerRegistry,
			realm: func(s servers, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, s.other.URL+"/token?"+r.URL.RawQuery, http.StatusFound)
			},
			cred: Credential{Username: user, Password: pass},
			check: func(t *testing.T, reg, realm, other *seen) {
				if got := other.auth["/token"]; len(got) != 1 || got[0] != "" {
					t.Errorf("the redirect's target got %q, want no Authorization", got)
				}
			},
		},
		{
			name: "a refresh token is not resent to another origin (307)",
			reg:  bearerRegistry,
			realm: func(s servers, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, s.other.URL+"/token", http.StatusTemporaryRedirect)
			},
			cred:    Credential{RefreshToken: refresh},
			wantErr: true,
			check: func(t *testing.T, reg, realm, other *seen) {
				if got := realm.body["/token"]; len(got) != 1 || !strings.Contains(got[0], "grant_type=refresh_token") {
					t.Errorf("realm got %q, want the refresh grant", got)
				}
				if strings.Contains(other.all(), refresh) || len(other.auth) != 0 {
					t.Errorf("the refresh token went on: %s", other.all())
				}
			},
		},
		{
			name: "credentials for another host are not sent",
			reg:  bearerRegistry, realm: tokenServer,
			cred: Credential{Username: user, Password: pass},
			check: func(t *testing.T, reg, realm, other *seen) {
				// The credential function gives nothing for this host.
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reg, realm, other seen
			var s servers
			s.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				other.add(r)
				if r.URL.Path == "/v2/team/app/manifests/1" {
					basicChallenge(w)
					return
				}
				io.WriteString(w, `{"token":"other"}`)
			}))
			defer s.other.Close()
			s.realm = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				realm.add(r)
				if tc.realm != nil {
					tc.realm(s, w, r)
				}
			}))
			defer s.realm.Close()
			s.reg = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reg.add(r)
				tc.reg(s, w, r)
			}))
			defer s.reg.Close()
			regHost := strings.TrimPrefix(s.reg.URL, "http://")
			credHost := regHost
			if strings.HasPrefix(tc.name, "credentials for another host") {
				credHost = "elsewhere.example"
			}
			c := testStack(t, Options{}).NewClient(ClientConfig{
				ClientID:             "wharf",
				BlockedRealmPrefixes: LoopbackRealmPrefixes(),
				Credential: func(host string) Credential {
					if host == credHost {
						return tc.cred
					}
					return Credential{}
				},
			})
			req, _ := http.NewRequest(http.MethodGet, s.reg.URL+"/v2/team/app/manifests/1", nil)
			req = req.WithContext(WithRepositoryScope(context.Background(), regHost, "team/app", ActionPull))
			resp, err := c.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tc.wantErr)
			}
			if err != nil && (strings.Contains(err.Error(), pass) || strings.Contains(err.Error(), refresh)) {
				t.Errorf("the error holds a credential: %v", err)
			}
			for _, sv := range []*seen{&reg, &realm, &other} {
				if sv == &realm {
					continue
				}
				if a := sv.all(); strings.Contains(a, "Basic") && sv == &other {
					t.Errorf("another origin got basic credentials: %s", a)
				}
			}
			if strings.HasPrefix(tc.name, "credentials for another host") && strings.Contains(realm.all(), "Basic") {
				t.Errorf("the realm got credentials meant for another host: %s", realm.all())
			}
			tc.check(t, &reg, &realm, &other)
		})
	}
}

func basicChallenge(w http.ResponseWriter) {
	w.Header().Set("Www-Authenticate", `Basic realm="r"`)
	w.WriteHeader(http.StatusUnauthorized)
}

// servers: a registry, the realm it names, and a third origin.
type servers struct{ reg, realm, other *httptest.Server }

// bearerRegistry challenges for a token at the realm server and takes any
// bearer token.
func bearerRegistry(s servers, w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		io.WriteString(w, "ok")
		return
	}
	w.Header().Set("Www-Authenticate", `Bearer realm="`+s.realm.URL+`/token",service="reg"`)
	w.WriteHeader(http.StatusUnauthorized)
}

func tokenServer(_ servers, w http.ResponseWriter, _ *http.Request) {
	io.WriteString(w, `{"token":"t","expires_in":300}`)
}
