// SPDX-License-Identifier: Apache-2.0

package hubkube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fakeAPI is an API server that refuses (401) every token but good and
// counts TokenRequests.
type fakeAPI struct {
	srv           *httptest.Server
	good          atomic.Value
	tokenRequests atomic.Int32
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{}
	f.good.Store("")
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/token") {
			f.tokenRequests.Add(1)
		}
		if r.Header.Get("Authorization") != "Bearer "+f.good.Load().(string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","items":[]}`))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) kubeconfig(t *testing.T, token string) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: f.srv.URL, InsecureSkipTLSVerify: true}
	kc.AuthInfos["a"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "a"}
	kc.CurrentContext = "hub"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func saToken(iat, exp time.Time) string {
	return jwt(fmt.Sprintf(`{"sub":"system:serviceaccount:shoal-system:shoal-agent-eu1","iat":%d,"exp":%d}`, iat.Unix(), exp.Unix()))
}

// runWithReissue runs c with a Reissue that hands out fresh and counts.
func runWithReissue(t *testing.T, c *Client, f *fakeAPI, fresh string, fail int) (*atomic.Int32, func() []byte) {
	t.Helper()
	var calls atomic.Int32
	var mu sync.Mutex
	var stored []byte
	c.Reissue = func(context.Context) ([]byte, error) {
		if int(calls.Add(1)) <= fail {
			return nil, fmt.Errorf("hub unreachable")
		}
		f.good.Store(fresh)
		return f.kubeconfig(t, fresh), nil
	}
	c.OnRefresh = func(_ context.Context, kc []byte) error {
		mu.Lock()
		defer mu.Unlock()
		stored = kc
		return nil
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return &calls, func() []byte { mu.Lock(); defer mu.Unlock(); return stored }
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExpiredTokenReissuedByHub: an agent back after an offline period
// longer than its token's life asks the hub for new credentials (retrying
// while the hub is unreachable) instead of a TokenRequest with the
// expired token, uses the new token and stores the new kubeconfig.
func TestExpiredTokenReissuedByHub(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now()
	expired := saToken(now.Add(-25*time.Hour), now.Add(-time.Hour))
	c, err := New(f.kubeconfig(t, expired))
	if err != nil {
		t.Fatal(err)
	}
	fresh := saToken(now, now.Add(24*time.Hour))
	calls, stored := runWithReissue(t, c, f, fresh, 1)
	waitFor(t, "reissued token in use", func() bool { return c.current() == fresh })
	if n := f.tokenRequests.Load(); n != 0 {
		t.Errorf("%d TokenRequests made with the expired token", n)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("Reissue called %d times, want 2 (one failed while the hub was unreachable)", n)
	}
	waitFor(t, "reissued kubeconfig stored", func() bool { return len(stored()) > 0 })
	if cfg, _ := clientcmd.RESTConfigFromKubeConfig(stored()); cfg.BearerToken != fresh {
		t.Error("stored kubeconfig does not hold the reissued token")
	}
	hc, err := restHTTPClient(c)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(f.srv.URL + "/api/v1/nodes")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("call with the reissued token: %v %v", resp, err)
	}
	_ = resp.Body.Close()
}

// TestRefusedTokenReissuedByHub: a token that has not expired but that the
// API server refuses (its ServiceAccount was recreated while the agent was
// away) is replaced through the hub at the first 401.
func TestRefusedTokenReissuedByHub(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now()
	c, err := New(f.kubeconfig(t, saToken(now, now.Add(24*time.Hour))))
	if err != nil {
		t.Fatal(err)
	}
	fresh := saToken(now, now.Add(23*time.Hour))
	calls, _ := runWithReissue(t, c, f, fresh, 0)
	hc, err := restHTTPClient(c)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(f.srv.URL + "/api/v1/nodes")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("call with the invalidated token: %v %v, want 401", resp, err)
	}
	_ = resp.Body.Close()
	waitFor(t, "reissued token in use", func() bool { return c.current() == fresh })
	if n := calls.Load(); n != 1 {
		t.Errorf("Reissue called %d times, want 1", n)
	}
}

// TestReissueIsSpaced: an API server that refuses even the reissued
// token does not make the agent ask the hub in a loop.
func TestReissueIsSpaced(t *testing.T) {
	f := newFakeAPI(t)
	now := time.Now()
	c, err := New(f.kubeconfig(t, saToken(now, now.Add(24*time.Hour))))
	if err != nil {
		t.Fatal(err)
	}
	fresh := saToken(now, now.Add(23*time.Hour))
	calls, _ := runWithReissue(t, c, f, fresh, 0)
	hc, err := restHTTPClient(c)
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		resp, err := hc.Get(f.srv.URL + "/api/v1/nodes")
		if err == nil {
			_ = resp.Body.Close()
		}
	}
	get()
	waitFor(t, "first reissue", func() bool { return calls.Load() == 1 })
	f.good.Store("none") // refuses the reissued token too
	for range 20 {
		get()
		time.Sleep(50 * time.Millisecond)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("Reissue called %d times within a second of refusals, want 1 (spaced by %v)", n, minReissueInterval)
	}
}
