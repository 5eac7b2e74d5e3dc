package testregistry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TokenServer issues registry bearer tokens the way Docker Hub's auth service
// does, for distribution's `auth.token` mode: ES256 JWTs whose x5c header
// carries a self-signed certificate that the registry trusts through its
// rootcertbundle. Users with valid basic credentials get every action they ask
// for; anonymous requests get a token with no access (so the registry answers
// 401 insufficient_scope), unless AnonymousPull is set.
type TokenServer struct {
	// URL is the server's base URL; the realm is URL+"/token".
	URL string
	// Issuer and Service are what the registry config must name.
	Issuer  string
	Service string
	// CertPath is the PEM certificate for the registry's rootcertbundle.
	CertPath string

	srv      *httptest.Server
	key      *ecdsa.PrivateKey
	certDER  []byte
	users    map[string]string
	anonPull bool

	mu        sync.Mutex
	refresh   map[string]string // refresh token → user
	expiresIn int64             // what expires_in says, in seconds; 0 = tokenLifetime
}

// SetExpiresIn makes the token responses say expires_in = seconds (0 goes
// back to the default, 300), whatever the tokens' own expiry: a test of how
// a client reads the field, up to absurd values.
func (ts *TokenServer) SetExpiresIn(seconds int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.expiresIn = seconds
}

// tokenLifetime is what expires_in says: 5 minutes, Docker Hub's value, so a
// test run never sees one expire.
const tokenLifetime = 5 * time.Minute

// NewTokenServer starts a token server for users (name → password); dir
// receives the certificate.
func NewTokenServer(dir string, users map[string]string, anonymousPull bool) (*TokenServer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testregistry: token key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "wharf test token issuer"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testregistry: token cert: %w", err)
	}
	certPath := filepath.Join(dir, "token-root.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certPath, pemBytes, 0o644); err != nil {
		return nil, fmt.Errorf("testregistry: %w", err)
	}
	ts := &TokenServer{
		Issuer:   "wharf-test-issuer",
		Service:  "wharf-test-registry",
		CertPath: certPath,
		key:      key,
		certDER:  der,
		users:    users,
		anonPull: anonymousPull,
		refresh:  map[string]string{},
	}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serveToken))
	ts.URL = ts.srv.URL
	return ts, nil
}

// Close stops the server.
func (ts *TokenServer) Close() { ts.srv.Close() }

func (ts *TokenServer) serveToken(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/token") {
		http.NotFound(w, r)
		return
	}
	var (
		user, scopeStr string
		scopes         []string
		offline        bool
		authed         bool
	)
	switch r.Method {
	case http.MethodGet:
		scopes = r.URL.Query()["scope"]
		offline = r.URL.Query().Get("offline_token") == "true"
		if u, p, ok := r.BasicAuth(); ok {
			if want, found := ts.users[u]; !found || want != p {
				tokenError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required: incorrect username or password")
				return
			}
			user, authed = u, true
		}
	case http.MethodPost: // OAuth2: grant_type=password or refresh_token
		if err := r.ParseForm(); err != nil {
			tokenError(w, http.StatusBadRequest, "BAD_REQUEST", err.Error())
			return
		}
		scopeStr = r.PostForm.Get("scope")
		scopes = strings.Fields(scopeStr)
		switch r.PostForm.Get("grant_type") {
		case "password":
			u, p := r.PostForm.Get("username"), r.PostForm.Get("password")
			if want, found := ts.users[u]; !found || want != p {
				tokenError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required: incorrect username or password")
				return
			}
			user, authed, offline = u, true, true
		case "refresh_token":
			ts.mu.Lock()
			u, found := ts.refresh[r.PostForm.Get("refresh_token")]
			ts.mu.Unlock()
			if !found {
				tokenError(w, http.StatusUnauthorized, "UNAUTHORIZED", "invalid refresh token")
				return
			}
			user, authed = u, true
		default:
			tokenError(w, http.StatusBadRequest, "UNSUPPORTED", "unsupported grant_type")
			return
		}
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}

	access := []map[string]any{}
	for _, s := range scopes {
		for _, one := range strings.Fields(s) {
			a := grant(one, authed, ts.anonPull)
			if a != nil {
				access = append(access, a)
			}
		}
	}
	now := time.Now()
	claims := jwt.MapClaims{
		"iss":    ts.Issuer,
		"sub":    user,
		"aud":    ts.Service,
		"exp":    now.Add(tokenLifetime).Unix(),
		"nbf":    now.Add(-time.Minute).Unix(),
		"iat":    now.Unix(),
		"jti":    fmt.Sprintf("%d", now.UnixNano()),
		"access": access,
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["x5c"] = []string{base64.StdEncoding.EncodeToString(ts.certDER)}
	signed, err := tok.SignedString(ts.key)
	if err != nil {
		tokenError(w, http.StatusInternalServerError, "INTERNAL", err.Error())
		return
	}
	ts.mu.Lock()
	expiresIn := ts.expiresIn
	ts.mu.Unlock()
	if expiresIn == 0 {
		expiresIn = int64(tokenLifetime / time.Second)
	}
	resp := map[string]any{
		"token":        signed,
		"access_token": signed,
		"expires_in":   expiresIn,
		"issued_at":    now.UTC().Format(time.RFC3339),
	}
	if offline && authed {
		rt := fmt.Sprintf("refresh-%d", now.UnixNano())
		ts.mu.Lock()
		ts.refresh[rt] = user
		ts.mu.Unlock()
		resp["refresh_token"] = rt
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// grant turns one scope ("repository:team/app:pull,push") into an access claim.
func grant(scope string, authed, anonPull bool) map[string]any {
	parts := strings.Split(scope, ":")
	if len(parts) < 3 {
		return nil
	}
	typ, actions := parts[0], strings.Split(parts[len(parts)-1], ",")
	name := strings.Join(parts[1:len(parts)-1], ":")
	var allowed []string
	for _, a := range actions {
		if authed || (anonPull && a == "pull") {
			allowed = append(allowed, a)
		}
	}
	if len(allowed) == 0 {
		return nil
	}
	return map[string]any{"type": typ, "name": name, "actions": allowed}
}

func tokenError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors":  []map[string]string{{"code": code, "message": msg}},
		"details": msg,
	})
}
