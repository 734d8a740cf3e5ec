// SPDX-License-Identifier: Apache-2.0

package hubkube

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(payload)) + ".sig"
}

func TestParseClaims(t *testing.T) {
	tests := []struct {
		name, token string
		ns, sa      string
		wantErr     bool
	}{
		{"sa token", jwt(`{"sub":"system:serviceaccount:shoal-system:shoal-agent-eu1","exp":200,"iat":100}`), "shoal-system", "shoal-agent-eu1", false},
		{"user token", jwt(`{"sub":"alice"}`), "", "", true},
		{"garbage", "abc", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseClaims(tt.token)
			var ns, sa string
			if err == nil {
				ns, sa, err = c.serviceAccount()
			}
			if (err != nil) != tt.wantErr || ns != tt.ns || sa != tt.sa {
				t.Errorf("got %q %q %v", ns, sa, err)
			}
			if err != nil && !errors.Is(err, ErrNotServiceAccountToken) {
				t.Errorf("error not typed: %v", err)
			}
		})
	}
}

func TestTokenIsSwappedInPlace(t *testing.T) {
	var got string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	defer srv.Close()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: srv.URL, InsecureSkipTLSVerify: true}
	kc.AuthInfos["a"] = &clientcmdapi.AuthInfo{Token: "old"}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "a"}
	kc.CurrentContext = "hub"
	raw, _ := clientcmd.Write(*kc)
	c, err := New(raw)
	if err != nil {
		t.Fatal(err)
	}
	httpClient := func() *http.Client {
		hc, err := restHTTPClient(c)
		if err != nil {
			t.Fatal(err)
		}
		return hc
	}()
	if _, err := httpClient.Get(srv.URL); err != nil || got != "Bearer old" {
		t.Fatalf("first call: %v %q", err, got)
	}
	c.mu.Lock()
	c.token = "new"
	c.mu.Unlock()
	if _, err := httpClient.Get(srv.URL); err != nil || got != "Bearer new" {
		t.Fatalf("after refresh: %v %q", err, got)
	}
	back, err := c.withToken("new")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := clientcmd.RESTConfigFromKubeConfig(back); cfg.BearerToken != "new" {
		t.Errorf("stored kubeconfig token = %q", cfg.BearerToken)
	}
}
