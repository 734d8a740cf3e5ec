// SPDX-License-Identifier: Apache-2.0

package webui

import (
	"fmt"
	"html"
	"net/http"
)

// authenticate asks the API who the caller of r is, with r's credentials,
// and returns the status the API answered (api nil: the serving
// http.Server's handler).
func authenticate(api http.Handler, r *http.Request) int {
	probe, err := http.NewRequestWithContext(r.Context(), http.MethodGet, WhoAmIPath, http.NoBody)
	if err != nil {
		return http.StatusInternalServerError
	}
	probe.Header = r.Header.Clone()
	probe.Header.Del("Content-Length")
	probe.Header.Set("Accept", "application/json")
	probe.TLS, probe.RemoteAddr, probe.Host = r.TLS, r.RemoteAddr, r.Host
	if api == nil {
		srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server)
		if !ok || srv.Handler == nil {
			return http.StatusInternalServerError // fail closed: nothing to ask
		}
		api = srv.Handler
	}
	rec := &statusRecorder{header: http.Header{}}
	api.ServeHTTP(rec, probe)
	if rec.status == 0 {
		return http.StatusOK // nothing written: net/http's default
	}
	return rec.status
}

// statusRecorder keeps the status of a response and drops its body.
type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header { return s.header }

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return len(b), nil
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}

// refuse answers a request the API did not authenticate: with the API's
// status (a server error as 502) and a page saying how to log in.
func refuse(w http.ResponseWriter, code int) {
	if code < 400 || code >= 500 {
		code = http.StatusBadGateway
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, loginPage, code, html.EscapeString(http.StatusText(code)))
}

// loginPage is shown to a caller the API refused; it carries no fleet data.
const loginPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shoal: log in</title></head>
<body>
<h1>Shoal fleet view: %d %s</h1>
<p>The hub answers the fleet view only to callers the API accepts. Use one of:</p>
<ul>
<li>a bearer ID token of the hub's OIDC issuer in the Authorization header,
added by a proxy in front of your browser.</li>
<li>your hub user certificate, imported into the browser (the PKCS#12 of the
files <code>shoal user create</code> wrote).</li>
</ul>
<p>See docs/webui.md.</p>
</body></html>
`
