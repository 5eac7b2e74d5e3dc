package registry

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/containerd/errdefs"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/wharfproject/wharf/registry/hosts"
	"github.com/wharfproject/wharf/registry/transport"
)

// credentialIdentity names a credential without holding it in clear: it
// keys token caches and single flights so that two users never share a
// token or an answer. Anonymous is "".
func credentialIdentity(ac *registrytypes.AuthConfig) string {
	if ac == nil || (ac.Username == "" && ac.Password == "" && ac.IdentityToken == "" && ac.RegistryToken == "") {
		return ""
	}
	h := sha256.New()
	for _, s := range []string{hosts.NormaliseServerAddress(ac.ServerAddress), ac.Username, ac.Password, ac.IdentityToken, ac.RegistryToken} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Login validates auth against its registry (ServerAddress) and returns the
// identity token the registry issued, if any. Wrong credentials are
// errdefs.ErrUnauthenticated with the registry's reason.
//
// Own requests rather than transport.Client's: login needs the
// refresh_token of the token response (the identity token docker stores),
// offline_token=true, and the status of the credential check itself
// rather than of a later request.
func (s *Service) Login(ctx context.Context, ac *registrytypes.AuthConfig) (string, error) {
	if ac == nil {
		return "", fmt.Errorf("no credentials%.0w", errdefs.ErrInvalidArgument)
	}
	if hosts.HasUserinfo(ac.ServerAddress) {
		// Never repeated: the user:password@ is what docs/security.md
		// promises to keep out of answers and logs.
		return "", fmt.Errorf("server address %q: credentials in the server address are not accepted; give them as username and password%.0w", RedactAddress(ac.ServerAddress), errdefs.ErrInvalidArgument)
	}
	index := hosts.NormaliseServerAddress(ac.ServerAddress)
	if index == "" {
		index = DefaultIndexName
	}
	if _, err := hosts.ValidateHost(index); err != nil {
		return "", fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	cfg := s.config() // once: blocked and the endpoints from one configuration
	if cfg.Blocked(index) {
		return "", blockedError(index)
	}
	// The upstream: the index's API host, or the server its hosts.toml names.
	eps, err := s.endpointsFor(ctx, cfg, index)
	if err != nil {
		return "", err
	}
	ep := eps[len(eps)-1]
	host := ep.host
	base := ep.apiBase() + "/"
	// A registry whose bearer challenge is remembered is not asked for it
	// again: its unauthenticated GET /v2/ could only answer that 401.
	c, ok := s.http.RememberedChallenge(host)
	if !ok {
		resp, err := s.loginGet(ctx, base, nil)
		if err != nil {
			return "", err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return "", nil // the registry needs no credentials
		case http.StatusUnauthorized:
		case http.StatusNotFound:
			return "", fmt.Errorf("login to %s: the registry has no v2 API%.0w", host, errdefs.ErrUnavailable)
		default:
			return "", transport.StatusError(http.MethodGet, resp, body, host)
		}
		if c, ok = transport.PreferredChallenge(resp.Header.Values("Www-Authenticate")); !ok {
			var offered []string
			for _, c := range transport.ParseChallenges(resp.Header.Values("Www-Authenticate")) {
				offered = append(offered, c.Scheme)
			}
			return "", fmt.Errorf("login to %s: no supported auth scheme offered (%s; wharfd speaks Bearer and Basic)%.0w", host, strings.Join(offered, ", "), errdefs.ErrUnavailable)
		}
	}
	params := c.Params
	switch c.Scheme {
	case "basic":
		h := http.Header{}
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(ac.Username+":"+ac.Password)))
		resp, err := s.loginGet(ctx, base, h)
		if err != nil {
			return "", err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return "", nil
		}
		return "", loginError(base, resp.StatusCode, body)
	default: // bearer, with a realm (preferredChallenge)
		s.http.RememberChallenge(host, params["realm"], params["service"])
		return s.loginToken(ctx, ep, base, params["realm"], params["service"], ac)
	}
}

// loginGet sends a GET outside transport.Client (the challenge is what we want).
func (s *Service) loginGet(ctx context.Context, u string, h http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	s.setUserAgent(req)
	return s.http.Do(req)
}

// loginToken asks the realm for a token with the credentials (GET with basic
// auth and offline_token=true, or the OAuth2 refresh grant for an identity
// token), then proves the token against /v2/.
func (s *Service) loginToken(ctx context.Context, ep *endpoint, base, realm, service string, ac *registrytypes.AuthConfig) (string, error) {
	ru, err := url.Parse(realm)
	if err != nil || (ru.Scheme != "https" && ru.Scheme != "http") {
		return "", fmt.Errorf("login: invalid bearer realm %q%.0w", realm, errdefs.ErrUnavailable)
	}
	if ru.Scheme == "http" && !ep.plainHTTP {
		return "", fmt.Errorf("login: bearer realm %q uses http but the registry is https%.0w", realm, errdefs.ErrUnavailable)
	}
	if err := checkRealmHost(ctx, ru, ep.host); err != nil {
		return "", err
	}
	var req *http.Request
	if ac.IdentityToken != "" {
		form := url.Values{}
		form.Set("grant_type", "refresh_token")
		form.Set("refresh_token", ac.IdentityToken)
		form.Set("service", service)
		form.Set("client_id", oauthClientID)
		form.Set("access_type", "offline")
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, realm, strings.NewReader(form.Encode()))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		q := ru.Query()
		if service != "" {
			q.Set("service", service)
		}
		q.Set("client_id", oauthClientID)
		q.Set("offline_token", "true")
		if ac.Username != "" {
			q.Set("account", ac.Username)
		}
		ru.RawQuery = q.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, ru.String(), nil)
		if err != nil {
			return "", err
		}
		req.SetBasicAuth(ac.Username, ac.Password)
	}
	s.setUserAgent(req)
	resp, err := s.http.Do(req)
	if err != nil {
		return "", err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, transport.MaxTokenBody+1))
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", loginError(base, resp.StatusCode, body)
	}
	if len(body) > transport.MaxTokenBody {
		return "", fmt.Errorf("login: token response from %s larger than %d bytes%.0w", ru.Host, transport.MaxTokenBody, errdefs.ErrUnavailable)
	}
	var tr struct {
		Token        string `json:"token"`
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(body, &tr); err != nil {
		return "", fmt.Errorf("login: decoding token response from %s: %w%.0w", ru.Host, err, errdefs.ErrUnavailable)
	}
	token := tr.AccessToken
	if token == "" {
		token = tr.Token
	}
	if token == "" {
		return "", fmt.Errorf("login: %s returned an empty token%.0w", ru.Host, errdefs.ErrUnavailable)
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	resp, err = s.loginGet(ctx, base, h)
	if err != nil {
		return "", err
	}
	body, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", loginError(base, resp.StatusCode, body)
	}
	return tr.RefreshToken, nil
}

// loginError words a refused login like dockerd, with the registry's reason.
func loginError(u string, status int, body []byte) error {
	msg := fmt.Sprintf("login attempt to %s failed with status: %d %s", u, status, http.StatusText(status))
	if reason := transport.Reason(body); reason != "" {
		msg += ": " + reason
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return fmt.Errorf("%s%.0w", msg, errdefs.ErrUnauthenticated)
	}
	if status == http.StatusTooManyRequests || status >= 500 {
		return fmt.Errorf("%s%.0w", msg, errdefs.ErrUnavailable)
	}
	return errors.New(msg)
}

// checkRealmHost applies the realm denylist of transport.Client to the
// realm login sends the password to: a registry must not
// point it at link-local or cloud-metadata addresses, nor, unless the
// registry is itself on this machine, at loopback.
func checkRealmHost(ctx context.Context, realm *url.URL, registryHost string) error {
	host := realm.Hostname()
	if strings.EqualFold(host, hosts.HostOnly(registryHost)) {
		return nil
	}
	prefixes := transport.DefaultBlockedRealmPrefixes()
	if hosts.IsLoopbackHost(registryHost) {
		prefixes = transport.LoopbackRealmPrefixes()
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else if ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host); err == nil {
		addrs = ips
	}
	for _, a := range addrs {
		for _, p := range prefixes {
			if p.Contains(a.Unmap()) {
				return fmt.Errorf("login: bearer realm %q resolves to %s, which is refused%.0w", realm.Redacted(), a, errdefs.ErrPermissionDenied)
			}
		}
	}
	return nil
}
