// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"
)

// Default lifetimes of a cached authorization decision, short as the
// kubelet's webhook authorizer's (5 min allowed, 30 s denied) or shorter: a
// revoked right stops working within a minute.
const (
	DefaultAuthorizedTTL   = time.Minute
	DefaultUnauthorizedTTL = 10 * time.Second
)

// groupAuthenticated is the group every authenticated user belongs to, as
// the API server's and the kubelet's authenticators add it.
const groupAuthenticated = "system:authenticated"

// requester is the user a verified client certificate names: the common
// name is the user, each organization a group (the API server's x509
// authenticator's convention).
type requester struct {
	name   string
	groups []string
}

// certUser returns the user of a request's verified client certificate; ok
// is false when the request carries none or its common name is empty.
func certUser(r *http.Request) (requester, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return requester{}, false
	}
	leaf := r.TLS.VerifiedChains[0][0]
	if leaf.Subject.CommonName == "" {
		return requester{}, false
	}
	groups := append(slices.Clone(leaf.Subject.Organization), groupAuthenticated)
	return requester{name: leaf.Subject.CommonName, groups: groups}, true
}

// apiVerb maps an HTTP method to the verb checked, as the kubelet does; a
// method it does not name checks the empty verb, which no role grants.
func apiVerb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodGet:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// isSubpath reports whether p is path or below it.
func isSubpath(p, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return p == path || (strings.HasPrefix(p, path) && p[len(path)] == '/')
}

// subresources are the nodes subresources a request path is checked
// against, in order; any one allowed admits the request. As the kubelet's
// (with fine-grained authorization, on by default since Kubernetes 1.33):
// /stats, /metrics, /logs and /checkpoint their own; /pods, /runningpods,
// /healthz and /configz their own, then proxy; everything else (container
// logs, exec, attach, port-forward) proxy.
func subresources(path string) []string {
	for _, p := range []struct{ path, sub string }{
		{"/stats", "stats"}, {"/metrics", "metrics"}, {"/logs", "log"}, {"/checkpoint", "checkpoint"},
	} {
		if isSubpath(path, p.path) {
			return []string{p.sub}
		}
	}
	for _, p := range []struct{ path, sub string }{
		{"/pods", "pods"}, {"/runningpods", "pods"}, {"/healthz", "healthz"}, {"/configz", "configz"},
	} {
		if isSubpath(path, p.path) {
			return []string{p.sub, "proxy"}
		}
	}
	return []string{"proxy"}
}

// attributes are the SubjectAccessReview resource attributes a request to
// the kubelet endpoint of node is checked against, in order.
func attributes(r *http.Request, node string) []authorizationv1.ResourceAttributes {
	verb := apiVerb(r.Method)
	subs := subresources(r.URL.Path)
	out := make([]authorizationv1.ResourceAttributes, 0, len(subs))
	for _, s := range subs {
		out = append(out, authorizationv1.ResourceAttributes{Verb: verb, Version: "v1", Resource: "nodes", Subresource: s, Name: node})
	}
	return out
}

// decision is one cached answer of the hub API server.
type decision struct {
	allowed bool
	reason  string
	expires time.Time
}

// Authorizer asks the hub API server, by SubjectAccessReview, whether the
// user of a client certificate may do a request to a kubelet endpoint, and
// remembers the answers a short while. One serves every virtual node.
type Authorizer struct {
	sar                            authzclient.SubjectAccessReviewInterface
	authorizedTTL, unauthorizedTTL time.Duration
	now                            func() time.Time
	mu                             sync.Mutex
	cache                          map[string]decision
}

// NewAuthorizer returns an Authorizer creating reviews through sar;
// zero TTLs take the defaults.
func NewAuthorizer(sar authzclient.SubjectAccessReviewInterface, authorizedTTL, unauthorizedTTL time.Duration) *Authorizer {
	if authorizedTTL == 0 {
		authorizedTTL = DefaultAuthorizedTTL
	}
	if unauthorizedTTL == 0 {
		unauthorizedTTL = DefaultUnauthorizedTTL
	}
	return &Authorizer{sar: sar, authorizedTTL: authorizedTTL, unauthorizedTTL: unauthorizedTTL,
		now: time.Now, cache: map[string]decision{}}
}

func cacheKey(u requester, a authorizationv1.ResourceAttributes) string {
	return strings.Join([]string{u.name, strings.Join(u.groups, ","), a.Verb, a.Resource, a.Subresource, a.Name}, "\x00")
}

// allowed answers one check, from the cache when it can.
func (z *Authorizer) allowed(ctx context.Context, u requester, a authorizationv1.ResourceAttributes) (bool, string, error) {
	key := cacheKey(u, a)
	now := z.now()
	z.mu.Lock()
	d, ok := z.cache[key]
	z.mu.Unlock()
	if ok && now.Before(d.expires) {
		return d.allowed, d.reason, nil
	}
	attrs := a
	review, err := z.sar.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.name, Groups: u.groups, ResourceAttributes: &attrs}}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	d = decision{allowed: review.Status.Allowed, reason: review.Status.Reason}
	if d.allowed {
		d.expires = now.Add(z.authorizedTTL)
	} else {
		d.expires = now.Add(z.unauthorizedTTL)
	}
	z.mu.Lock()
	for k, old := range z.cache { // keep the map to live entries
		if !now.Before(old.expires) {
			delete(z.cache, k)
		}
	}
	z.cache[key] = d
	z.mu.Unlock()
	return d.allowed, d.reason, nil
}

// guard wraps the kubelet routes of node: 401 without a verified client
// certificate, 403 when the hub API server does not allow its user any of
// the request's attributes, 500 when it cannot be asked.
func (z *Authorizer) guard(node string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := certUser(r)
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := attributes(r, node)
		for _, a := range attrs {
			ok, _, err := z.allowed(r.Context(), u, a)
			if err != nil {
				klog.FromContext(r.Context()).Error(err, "Authorization of a kubelet API request failed", "node", node, "user", u.name)
				http.Error(w, "Authorization error (user="+u.name+")", http.StatusInternalServerError)
				return
			}
			if ok {
				next.ServeHTTP(w, r)
				return
			}
		}
		subs := make([]string, 0, len(attrs))
		for _, a := range attrs {
			subs = append(subs, a.Subresource)
		}
		klog.FromContext(r.Context()).V(2).Info("Kubelet API request forbidden", "node", node, "user", u.name,
			"verb", attrs[0].Verb, "subresources", subs, "path", r.URL.Path)
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v)", u.name, attrs[0].Verb, subs),
			http.StatusForbidden)
	})
}
