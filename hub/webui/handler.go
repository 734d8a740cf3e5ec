// SPDX-License-Identifier: Apache-2.0

package webui

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// Prefix is the path the hub serves the fleet view under.
const Prefix = "/ui/"

// WhoAmIPath is the REST call Handler makes, with the caller's credentials,
// to authenticate a page request.
const WhoAmIPath = "/v1/whoami"

//go:embed assets
var assets embed.FS

// Assets returns the embedded files of the view (index.html, the scripts
// and the style sheet), rooted at the assets folder.
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the folder is embedded at build time
	}
	return sub
}

// Handler serves the view under Prefix. api is the hub's REST handler
// (nil: the handler of the http.Server serving the request, i.e. the REST
// listener the view is mounted on): each request is first sent to it as
// GET /v1/whoami with the request's TLS connection state and headers, and
// the page is served only when the API answers 200, so the view is open to
// exactly the callers the API answers (client certificate or bearer ID
// token) and refused with the API's own status otherwise. Only GET and HEAD
// are served: the view is read-only.
func Handler(api http.Handler) http.Handler {
	files := http.StripPrefix(strings.TrimSuffix(Prefix, "/"), http.FileServerFS(Assets()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the fleet view is read-only", http.StatusMethodNotAllowed)
			return
		}
		if code := authenticate(api, r); code != http.StatusOK {
			refuse(w, code)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// securityHeaders keep the pages from being framed, from running any
// script but their own and from sending the address elsewhere.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}
