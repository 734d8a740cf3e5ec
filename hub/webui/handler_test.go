// SPDX-License-Identifier: Apache-2.0

package webui

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeAPI answers /v1/whoami 200 for "Bearer good" or a TLS connection
// with a peer certificate, 401 otherwise, and records what it saw.
type fakeAPI struct {
	paths []string
	auth  []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	if r.Header.Get("Authorization") == "Bearer good" || (r.TLS != nil && len(r.TLS.PeerCertificates) > 0) {
		_, _ = io.WriteString(w, `{"user":"u"}`)
		return
	}
	w.WriteHeader(http.StatusUnauthorized)
}

func get(t *testing.T, h http.Handler, method, path, auth string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestServesPagesOnlyToCallersTheAPIAccepts(t *testing.T) {
	api := &fakeAPI{}
	h := Handler(api)
	w := get(t, h, http.MethodGet, "/ui/", "Bearer good")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `<script src="app.js">`) {
		t.Fatalf("GET /ui/ with a good token: %d\n%s", w.Code, w.Body)
	}
	if len(api.paths) != 1 || api.paths[0] != "GET "+WhoAmIPath || api.auth[0] != "Bearer good" {
		t.Fatalf("the API was asked %v with %v, want one GET %s with the caller's Authorization", api.paths, api.auth, WhoAmIPath)
	}
	for _, tc := range []struct{ path, typ string }{
		{"/ui/app.js", "text/javascript"}, {"/ui/style.css", "text/css"}, {"/ui/views.js", "text/javascript"},
	} {
		w := get(t, h, http.MethodGet, tc.path, "Bearer good")
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), tc.typ) {
			t.Errorf("GET %s: %d %q, want 200 %s", tc.path, w.Code, w.Header().Get("Content-Type"), tc.typ)
		}
	}
	for _, auth := range []string{"", "Bearer bad"} {
		w := get(t, h, http.MethodGet, "/ui/app.js", auth)
		if w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "fleet.jobs") ||
			!strings.Contains(w.Body.String(), "docs/webui.md") {
			t.Errorf("GET /ui/app.js with %q: %d, want 401 and the login page only\n%s", auth, w.Code, w.Body)
		}
	}
}

func TestClientCertificateReachesTheAPI(t *testing.T) {
	api := &fakeAPI{}
	r := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{}}}
	w := httptest.NewRecorder()
	Handler(api).ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("GET /ui/ over TLS with a client certificate: %d, want 200", w.Code)
	}
}

func TestReadOnlyAndHardened(t *testing.T) {
	h := Handler(&fakeAPI{})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		if w := get(t, h, m, "/ui/", "Bearer good"); w.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s /ui/: %d, want 405", m, w.Code)
		}
	}
	w := get(t, h, http.MethodGet, "/ui/", "Bearer good")
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v: want a CSP allowing only the view's own scripts, no framing, nosniff", w.Header())
	}
}

func TestAPIFailureIsBadGateway(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	if w := get(t, Handler(api), http.MethodGet, "/ui/", "Bearer good"); w.Code != http.StatusBadGateway {
		t.Errorf("GET /ui/ while the API fails: %d, want 502", w.Code)
	}
}

// TestAssetsUseNoInlineCode keeps the view within its CSP: no inline
// scripts, no style attributes, no handlers in HTML, no innerHTML.
func TestAssetsUseNoInlineCode(t *testing.T) {
	err := fs.WalkDir(Assets(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Assets(), p)
		if err != nil {
			return err
		}
		s := string(b)
		for _, bad := range []string{"<script>", "style=\"", " onclick=", "innerHTML", "outerHTML", "eval(", "document.write"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", p, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAsksTheServingHandler mounts the view on a mux beside a fake API, as
// the hub's REST listener does, with no handler given.
func TestAsksTheServingHandler(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/v1/", &fakeAPI{})
	mux.Handle(Prefix, Handler(nil))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for auth, want := range map[string]int{"Bearer good": http.StatusOK, "Bearer bad": http.StatusUnauthorized} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/ui/", nil)
		req.Header.Set("Authorization", auth)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", auth, resp.StatusCode, want)
		}
	}
	w := httptest.NewRecorder()
	Handler(nil).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ui/", nil))
	if w.Code != http.StatusBadGateway {
		t.Errorf("outside a server: %d, want the refusal (502)", w.Code)
	}
}
