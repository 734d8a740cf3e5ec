// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/federation/endpoint"
)

func TestUIProxyForwardsReadsOfItsSessionOnly(t *testing.T) {
	var seen []*http.Request
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r)
		_, _ = io.WriteString(w, "hub:"+r.URL.Path)
	}))
	defer hub.Close()
	base, _ := url.Parse(hub.URL)
	const host = "127.0.0.1:8001"
	p, err := newUIProxy(base, hub.Client().Transport, func(r *http.Request) error {
		r.Header.Set("Authorization", "Bearer mine")
		return nil
	}, host)
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, target, cookie, hostHeader string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, nil)
		r.Host = hostHeader
		r.Header.Set("Authorization", "Bearer the-browsers")
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: uiSessionCookie, Value: cookie})
		}
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		return w
	}
	if w := do("GET", "/ui/", "", host); w.Code != http.StatusForbidden {
		t.Errorf("no session: %d, want 403", w.Code)
	}
	if w := do("GET", "/ui/?session=guess", "", host); w.Code != http.StatusForbidden {
		t.Errorf("wrong session: %d, want 403", w.Code)
	}
	u, _ := url.Parse(p.URL())
	w := do("GET", u.RequestURI(), "", host)
	ck := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || len(ck) != 1 || ck[0].Value != p.secret || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("session URL: %d cookies %v, want a redirect setting the HttpOnly SameSite=Strict session cookie", w.Code, ck)
	}
	if w := do("GET", "/ui/", p.secret, "evil.example:8001"); w.Code != http.StatusForbidden {
		t.Errorf("another Host: %d, want 403", w.Code)
	}
	if w := do("POST", "/v1/jobs", p.secret, host); w.Code != http.StatusMethodNotAllowed || len(seen) != 0 {
		t.Errorf("POST: %d (%d forwarded), want 405 and nothing forwarded", w.Code, len(seen))
	}
	if w := do("GET", "/metrics", p.secret, host); w.Code != http.StatusNotFound {
		t.Errorf("GET /metrics: %d, want 404: only /ui/ and /v1/ go through", w.Code)
	}
	w = do("GET", "/v1/jobs?phase=Pending", p.secret, host)
	if w.Code != http.StatusOK || w.Body.String() != "hub:/v1/jobs" || len(seen) != 1 {
		t.Fatalf("GET /v1/jobs: %d %q", w.Code, w.Body)
	}
	r := seen[0]
	if r.Header.Get("Authorization") != "Bearer mine" || r.Header.Get("Cookie") != "" || r.URL.RawQuery != "phase=Pending" ||
		!strings.HasPrefix(hub.URL, "http://"+r.Host) {
		t.Errorf("forwarded %s %s Host %s Authorization %q Cookie %q: want the user's credentials only, the query, the hub's Host",
			r.Method, r.URL, r.Host, r.Header.Get("Authorization"), r.Header.Get("Cookie"))
	}
}

func TestUIListensOnLoopbackOnly(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:0": true, "[::1]:8001": true, "localhost:1": true,
		"0.0.0.0:8001": false, ":8001": false, "10.0.0.1:80": false} {
		if endpoint.IsLoopback(addr) != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, !want, want)
		}
	}
	for _, bad := range []string{"ftp://x", "http://hub:7443", "hub:7443"} {
		if _, err := uiRESTURL(bad); err == nil {
			t.Errorf("--rest-url %s was accepted", bad)
		}
	}
	t.Setenv(uiRESTEnv, "")
	if _, err := uiRESTURL(""); err == nil || !strings.Contains(err.Error(), "--rest-url") {
		t.Errorf("no REST URL: %v, want an error naming --rest-url", err)
	}
	t.Setenv(uiRESTEnv, "https://hub:7444")
	if u, err := uiRESTURL(""); err != nil || u.String() != "https://hub:7444" {
		t.Errorf("REST URL from $%s: %v (%v)", uiRESTEnv, u, err)
	}
}
