// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// uiSessionCookie holds the proxy's session secret in the browser.
const uiSessionCookie = "shoal-ui-session"

// uiProxy forwards a browser's read-only requests to the hub's REST
// listener with the user's own credentials (the transport carries the
// context's client certificate, or authorize adds the ID token). Only the
// browser that opened the printed address, which carries the one-time
// session secret, gets through: another local user or a web page that
// reaches the loopback port has no session cookie, and the Host header
// must be the proxy's own (no DNS rebinding).
type uiProxy struct {
	secret string
	// host is the proxy's own host:port, the only Host accepted.
	host    string
	forward *httputil.ReverseProxy
}

// newUIProxy proxies to hub (the REST base URL) through transport;
// authorize sets the credentials on each outgoing request (nil: the
// transport's client certificate is the credential).
func newUIProxy(hub *url.URL, transport http.RoundTripper, authorize func(*http.Request) error, host string) (*uiProxy, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	p := &uiProxy{secret: hex.EncodeToString(b), host: host}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(hub)
			r.Out.Host = hub.Host
			r.Out.Header.Del("Authorization")
			r.Out.Header.Del("Cookie")
			if authorize != nil {
				if err := authorize(r.Out); err != nil {
					*r.Out = *r.Out.WithContext(canceled(r.Out.Context(), err))
				}
			}
		},
		Transport:     transport,
		FlushInterval: -1, // the jobs watch streams
	}
	return p, nil
}

// URL is the address to open: it hands the browser its session.
func (p *uiProxy) URL() string { return "http://" + p.host + "/ui/?session=" + p.secret }

func (p *uiProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Host != p.host {
		http.Error(w, "wrong Host: open "+"http://"+p.host+"/ui/", http.StatusForbidden)
		return
	}
	if s := r.URL.Query().Get("session"); s != "" && r.URL.Path == "/ui/" {
		if subtle.ConstantTimeCompare([]byte(s), []byte(p.secret)) != 1 {
			http.Error(w, "wrong session: open the address `shoal ui` printed", http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: uiSessionCookie, Value: p.secret, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(uiSessionCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(p.secret)) != 1 {
		http.Error(w, "no session: open the address `shoal ui` printed", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "shoal ui forwards reads only", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "/" {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/ui/") && !strings.HasPrefix(r.URL.Path, "/v1/") {
		http.NotFound(w, r)
		return
	}
	p.forward.ServeHTTP(w, r)
}

// canceled is ctx canceled with cause err: a request whose credentials
// could not be read fails in the transport instead of going out without them.
func canceled(ctx context.Context, err error) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	cancel(err)
	return ctx
}
