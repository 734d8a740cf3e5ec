// SPDX-License-Identifier: Apache-2.0

package users_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/coreos/go-oidc/v3/oidc/oidctest"

	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/users"
)

// issuer is an in-process OIDC issuer over TLS that signs RS256 tokens.
type issuer struct {
	url, caFile string
	key         *rsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := &oidctest.Server{PublicKeys: []oidctest.PublicKey{{PublicKey: key.Public(), KeyID: "k1", Algorithm: oidc.RS256}}}
	srv := httptest.NewTLSServer(s)
	t.Cleanup(srv.Close)
	s.SetIssuer(srv.URL)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &issuer{url: srv.URL, caFile: caFile, key: key}
}

// sign signs claims with key ID k1 (iss defaults to the issuer, exp to an
// hour from now).
func (i *issuer) sign(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	return i.signKID(t, key, "k1", claims)
}

// signKID is sign with key ID kid.
func (i *issuer) signKID(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	if _, ok := claims["iss"]; !ok {
		claims["iss"] = i.url
	}
	if _, ok := claims["exp"]; !ok {
		claims["exp"] = time.Now().Add(time.Hour).Unix()
	}
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return oidctest.SignIDToken(key, kid, oidc.RS256, string(b))
}

func TestTokenVerifier(t *testing.T) {
	iss := newIssuer(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	v, err := users.NewTokenVerifier(users.OIDCConfig{IssuerURL: iss.url, ClientID: "shoal", UsernameClaim: "email",
		UsernamePrefix: "corp:", GroupsClaim: "groups", GroupsPrefix: "g:", CAFile: iss.caFile})
	if err != nil {
		t.Fatal(err)
	}
	ok := func() map[string]any {
		return map[string]any{"aud": "shoal", "sub": "123", "email": "dave@example.com", "email_verified": true, "groups": []string{"ml", "ops"}}
	}
	with := func(k string, val any) map[string]any { c := ok(); c[k] = val; return c }
	ctx := context.Background()
	id, err := v.Verify(ctx, iss.sign(t, iss.key, ok()))
	if err != nil || id.Username != "corp:dave@example.com" || strings.Join(id.Groups, ",") != "g:ml,g:ops" {
		t.Fatalf("Verify = %+v, %v", id, err)
	}
	if id, err := v.Verify(ctx, iss.sign(t, iss.key, with("groups", "solo"))); err != nil || len(id.Groups) != 1 || id.Groups[0] != "g:solo" {
		t.Fatalf("a groups claim that is a string: %+v, %v", id, err)
	}
	for _, tt := range []struct {
		name, token, msg string
		want             error
	}{
		{"wrong audience", iss.sign(t, iss.key, with("aud", "other")), "audience", users.ErrUnauthenticated},
		{"wrong issuer", iss.sign(t, iss.key, with("iss", "https://evil.example.com")), "different provider", users.ErrUnauthenticated},
		{"bad signature", iss.sign(t, other, ok()), "signature", users.ErrUnauthenticated},
		{"expired", iss.sign(t, iss.key, with("exp", time.Now().Add(-time.Minute).Unix())), "token expired", users.ErrTokenExpired},
		{"unverified email", iss.sign(t, iss.key, with("email_verified", false)), "not verified", users.ErrUnauthenticated},
		{"no username claim", iss.sign(t, iss.key, with("email", 7)), `no string claim "email"`, users.ErrUnauthenticated},
		{"bad groups claim", iss.sign(t, iss.key, with("groups", 7)), "groups", users.ErrUnauthenticated},
		{"not a JWT", "garbage", "invalid ID token", users.ErrUnauthenticated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(ctx, tt.token)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Verify: %v, want %v with %q", err, tt.want, tt.msg)
			}
		})
	}
}

func TestTokenVerifierUnreachableIssuer(t *testing.T) {
	iss := newIssuer(t)
	// Without the issuer's CA the discovery fails the TLS check: the hub
	// says the issuer is unavailable rather than that the token is bad.
	v, err := users.NewTokenVerifier(users.OIDCConfig{IssuerURL: iss.url, ClientID: "shoal"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), iss.sign(t, iss.key, map[string]any{"aud": "shoal", "sub": "x"})); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("Verify: %v, want ErrUnavailable", err)
	}
}

func TestOIDCConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg users.OIDCConfig
		ok  bool
	}{
		{users.OIDCConfig{}, true},
		{users.OIDCConfig{IssuerURL: "https://id.example.com", ClientID: "shoal"}, true},
		{users.OIDCConfig{IssuerURL: "http://id.example.com", ClientID: "shoal"}, false},
		{users.OIDCConfig{IssuerURL: "https://id.example.com"}, false},
		{users.OIDCConfig{ClientID: "shoal"}, false},
	} {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: %v, want ok=%v", tt.cfg, err, tt.ok)
		}
	}
}

// TestJWKSRefetchLimited: tokens signed by a key the issuer does not
// publish make the hub fetch the JWKS at most once per interval (not once
// per call), and a key the issuer rotates in is picked up after it.
func TestJWKSRefetchLimited(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := &oidctest.Server{PublicKeys: []oidctest.PublicKey{{PublicKey: key.Public(), KeyID: "k1", Algorithm: oidc.RS256}}}
	var mu sync.Mutex
	fetches := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.URL.Path == "/keys" {
			fetches++
		}
		mu.Unlock()
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.SetIssuer(srv.URL)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	iss := &issuer{url: srv.URL, caFile: caFile, key: key}
	v, err := users.NewTokenVerifier(users.OIDCConfig{IssuerURL: srv.URL, ClientID: "shoal", CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	users.SetJWKSRefetch(v, time.Hour)
	claims := func() map[string]any { return map[string]any{"aud": "shoal", "sub": "dave"} }
	count := func() int { mu.Lock(); defer mu.Unlock(); return fetches }
	ctx := context.Background()
	if _, err := v.Verify(ctx, iss.sign(t, key, claims())); err != nil {
		t.Fatal(err)
	}
	unknown := iss.signKID(t, rotated, "k2", claims())
	for range 20 {
		if _, err := v.Verify(ctx, unknown); !errors.Is(err, users.ErrUnauthenticated) {
			t.Fatalf("a token of an unpublished key: %v, want ErrUnauthenticated", err)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("%d JWKS fetches for one valid and 20 unknown-key tokens within the interval, want 1", n)
	}
	// The issuer rotates k2 in; once the interval has passed the hub picks it up.
	s.PublicKeys = append(s.PublicKeys, oidctest.PublicKey{PublicKey: rotated.Public(), KeyID: "k2", Algorithm: oidc.RS256})
	users.SetJWKSRefetch(v, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	if id, err := v.Verify(ctx, unknown); err != nil || id.Username != "dave" {
		t.Fatalf("a token of the rotated-in key: %+v, %v", id, err)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d JWKS fetches, want 2", n)
	}
}
