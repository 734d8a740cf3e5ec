// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestAttributes(t *testing.T) {
	const node = "shoal-eu1-h100"
	for _, tt := range []struct {
		method, path string
		verb         string
		subs         []string
	}{
		{http.MethodGet, "/pods", "get", []string{"pods", "proxy"}},
		{http.MethodGet, "/pods/", "get", []string{"pods", "proxy"}},
		{http.MethodGet, "/runningpods/", "get", []string{"pods", "proxy"}},
		{http.MethodGet, "/podsx", "get", []string{"proxy"}},
		{http.MethodGet, "/stats/summary", "get", []string{"stats"}},
		{http.MethodGet, "/stats", "get", []string{"stats"}},
		{http.MethodGet, "/metrics/resource", "get", []string{"metrics"}},
		{http.MethodGet, "/logs/syslog", "get", []string{"log"}},
		{http.MethodPost, "/checkpoint/ns/p/c", "create", []string{"checkpoint"}},
		{http.MethodGet, "/healthz", "get", []string{"healthz", "proxy"}},
		{http.MethodGet, "/configz", "get", []string{"configz", "proxy"}},
		// Pod logs, exec, attach and port-forward are nodes/proxy, as on a kubelet.
		{http.MethodGet, "/containerLogs/shoal-jobs/m0/main", "get", []string{"proxy"}},
		{http.MethodPost, "/exec/shoal-jobs/m0/main", "create", []string{"proxy"}},
		{http.MethodGet, "/exec/shoal-jobs/m0/main", "get", []string{"proxy"}},
		{http.MethodPost, "/attach/shoal-jobs/m0/main", "create", []string{"proxy"}},
		{http.MethodPost, "/portForward/shoal-jobs/m0", "create", []string{"proxy"}},
		{http.MethodPut, "/x", "update", []string{"proxy"}},
		{http.MethodPatch, "/x", "patch", []string{"proxy"}},
		{http.MethodDelete, "/x", "delete", []string{"proxy"}},
		{http.MethodOptions, "/pods", "", []string{"pods", "proxy"}},
	} {
		r := httptest.NewRequest(tt.method, tt.path, nil)
		attrs := attributes(r, node)
		var subs []string
		for _, a := range attrs {
			subs = append(subs, a.Subresource)
			if a.Verb != tt.verb || a.Resource != "nodes" || a.Name != node || a.Version != "v1" || a.Group != "" || a.Namespace != "" {
				t.Errorf("%s %s: attributes %+v, want verb %q on nodes/%s", tt.method, tt.path, a, tt.verb, node)
			}
		}
		if !slices.Equal(subs, tt.subs) {
			t.Errorf("%s %s: subresources %v, want %v", tt.method, tt.path, subs, tt.subs)
		}
	}
}

// fakeSAR answers SubjectAccessReviews from a table of allowed
// "user verb subresource" and counts the reviews.
type fakeSAR struct {
	mu      sync.Mutex
	allowed map[string]bool
	reviews []authorizationv1.SubjectAccessReviewSpec
}

func (f *fakeSAR) client() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.reviews = append(f.reviews, sar.Spec)
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = f.allowed[sar.Spec.User+" "+ra.Verb+" "+ra.Subresource]
		return true, sar, nil
	})
	return c
}

func (f *fakeSAR) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reviews)
}

// withCert makes r look as if it came over TLS with a verified client
// certificate of user in groups.
func withCert(r *http.Request, user string, groups ...string) *http.Request {
	leaf := &x509.Certificate{Subject: pkix.Name{CommonName: user, Organization: groups}}
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}, VerifiedChains: [][]*x509.Certificate{{leaf}}}
	return r
}

func TestGuard(t *testing.T) {
	const node = "shoal-eu1-h100"
	sar := &fakeSAR{allowed: map[string]bool{
		"apiserver create proxy": true, "apiserver get proxy": true,
		"scraper get stats": true, "lister get proxy": true,
	}}
	z := NewAuthorizer(sar.client().AuthorizationV1().SubjectAccessReviews(), time.Minute, 10*time.Second)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	z.now = func() time.Time { return now }
	served := 0
	h := z.guard(node, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++ }))
	do := func(r *http.Request) (int, string) {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}

	if code, _ := do(httptest.NewRequest(http.MethodGet, "/pods", nil)); code != http.StatusUnauthorized {
		t.Errorf("no certificate: %d, want 401", code)
	}
	if code, _ := do(withCert(httptest.NewRequest(http.MethodGet, "/pods", nil), "")); code != http.StatusUnauthorized {
		t.Errorf("certificate without a common name: %d, want 401", code)
	}
	if served != 0 || sar.count() != 0 {
		t.Fatalf("unauthenticated requests served %d, reviewed %d", served, sar.count())
	}

	if code, _ := do(withCert(httptest.NewRequest(http.MethodPost, "/exec/shoal-jobs/m0/main", nil), "apiserver", "system:masters")); code != http.StatusOK {
		t.Errorf("exec by the API server: %d", code)
	}
	spec := sar.reviews[0]
	if spec.User != "apiserver" || !slices.Equal(spec.Groups, []string{"system:masters", groupAuthenticated}) ||
		*spec.ResourceAttributes != (authorizationv1.ResourceAttributes{Verb: "create", Version: "v1", Resource: "nodes", Subresource: "proxy", Name: node}) {
		t.Errorf("review = %+v %+v", spec, spec.ResourceAttributes)
	}
	// The allowed answer is reused for its TTL, then asked again.
	do(withCert(httptest.NewRequest(http.MethodPost, "/attach/shoal-jobs/m0/main", nil), "apiserver", "system:masters"))
	if sar.count() != 1 || served != 2 {
		t.Errorf("cached decision: %d reviews, %d served, want 1 and 2", sar.count(), served)
	}
	now = now.Add(time.Minute)
	do(withCert(httptest.NewRequest(http.MethodPost, "/exec/shoal-jobs/m0/main", nil), "apiserver", "system:masters"))
	if sar.count() != 2 || served != 3 {
		t.Errorf("expired decision: %d reviews, %d served, want 2 and 3", sar.count(), served)
	}

	// A user without nodes/proxy is forbidden exec, and the denial is cached a shorter while.
	code, body := do(withCert(httptest.NewRequest(http.MethodPost, "/exec/shoal-jobs/m0/main", nil), "scraper"))
	if code != http.StatusForbidden || !strings.Contains(body, "user=scraper") || !strings.Contains(body, "verb=create") ||
		!strings.Contains(body, "subresource(s)=[proxy]") {
		t.Errorf("exec by scraper: %d %q, want 403 naming user, verb and subresource", code, body)
	}
	before := sar.count()
	do(withCert(httptest.NewRequest(http.MethodPost, "/exec/shoal-jobs/m0/main", nil), "scraper"))
	now = now.Add(10 * time.Second)
	do(withCert(httptest.NewRequest(http.MethodPost, "/exec/shoal-jobs/m0/main", nil), "scraper"))
	if sar.count() != before+1 || served != 3 {
		t.Errorf("denials: %d reviews after the first, %d served, want 1 (cached, then expired) and 3", sar.count()-before, served)
	}
	// nodes/stats admits /stats/summary only.
	if code, _ := do(withCert(httptest.NewRequest(http.MethodGet, "/stats/summary", nil), "scraper")); code != http.StatusOK {
		t.Errorf("stats by scraper: %d", code)
	}
	if code, _ := do(withCert(httptest.NewRequest(http.MethodGet, "/containerLogs/shoal-jobs/m0/main", nil), "scraper")); code != http.StatusForbidden {
		t.Errorf("logs by scraper: %d, want 403", code)
	}
	// /pods: nodes/pods is asked first, then nodes/proxy admits.
	before = sar.count()
	if code, _ := do(withCert(httptest.NewRequest(http.MethodGet, "/pods", nil), "lister")); code != http.StatusOK {
		t.Errorf("/pods by lister: %d", code)
	}
	if got := sar.reviews[before:]; len(got) != 2 || got[0].ResourceAttributes.Subresource != "pods" || got[1].ResourceAttributes.Subresource != "proxy" {
		t.Errorf("/pods reviews = %+v, want pods then proxy", got)
	}
	// Decisions are per node: another node's endpoint asks again.
	before = sar.count()
	other := z.guard("shoal-eu1-a100", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w := httptest.NewRecorder()
	other.ServeHTTP(w, withCert(httptest.NewRequest(http.MethodPost, "/exec/shoal-jobs/m0/main", nil), "apiserver", "system:masters"))
	if w.Code != http.StatusOK || sar.count() != before+1 || sar.reviews[before].ResourceAttributes.Name != "shoal-eu1-a100" {
		t.Errorf("other node: %d, %d reviews", w.Code, sar.count()-before)
	}
}

func TestGuardReviewError(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errFake
	})
	z := NewAuthorizer(c.AuthorizationV1().SubjectAccessReviews(), 0, 0)
	served := false
	h := z.guard("n", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served = true }))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, withCert(httptest.NewRequest(http.MethodGet, "/pods", nil), "apiserver"))
	if w.Code != http.StatusInternalServerError || served {
		t.Errorf("review error: %d, served %v, want 500 and not served", w.Code, served)
	}
	if len(z.cache) != 0 {
		t.Errorf("an error was cached: %v", z.cache)
	}
}
