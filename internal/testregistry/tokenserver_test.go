package testregistry

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func postToken(t *testing.T, ts *TokenServer, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(ts.URL+"/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestTokenServerOAuthPasswordAndRefreshGrants(t *testing.T) {
	ts, err := NewTokenServer(t.TempDir(), map[string]string{"u": "p"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	scope := "repository:a/b:pull"
	status, m := postToken(t, ts, url.Values{"grant_type": {"password"}, "username": {"u"}, "password": {"p"}, "service": {ts.Service}, "scope": {scope}})
	if status != 200 || m["access_token"] == "" || m["refresh_token"] == nil {
		t.Fatalf("password grant: %d %v", status, m)
	}
	status, m = postToken(t, ts, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {m["refresh_token"].(string)}, "service": {ts.Service}, "scope": {scope}})
	if status != 200 || m["access_token"] == "" {
		t.Fatalf("refresh grant: %d %v", status, m)
	}
	if status, _ = postToken(t, ts, url.Values{"grant_type": {"password"}, "username": {"u"}, "password": {"bad"}}); status != 401 {
		t.Fatalf("wrong password: %d", status)
	}
	if status, _ = postToken(t, ts, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"forged"}}); status != 401 {
		t.Fatalf("forged refresh token: %d", status)
	}
}

func TestGrantGivesAnonymousPullOnlyWhenAllowed(t *testing.T) {
	for _, tc := range []struct {
		scope        string
		authed, anon bool
		want         string
	}{
		{"repository:a/b:pull,push", true, false, "pull,push"},
		{"repository:a/b:pull,push", false, false, ""},
		{"repository:a/b:pull,push", false, true, "pull"},
		{"repository:127.0.0.1:5000/x:pull", true, false, "pull"},
		{"bogus", true, false, ""},
	} {
		g := grant(tc.scope, tc.authed, tc.anon)
		got := ""
		if g != nil {
			got = strings.Join(g["actions"].([]string), ",")
		}
		if got != tc.want {
			t.Errorf("grant(%q, %v, %v) = %q, want %q", tc.scope, tc.authed, tc.anon, got, tc.want)
		}
	}
}
