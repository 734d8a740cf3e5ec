// SPDX-License-Identifier: Apache-2.0

package registry_test

import (
	"crypto/x509"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/hub/registry"
)

// TestBadTokenNeverReachesSigner: a Register with a malformed, unknown,
// wrong-secret, revoked, expired or used-up token is refused with
// ErrInvalidToken before the CSR is signed; a good token is signed once.
func TestBadTokenNeverReachesSigner(t *testing.T) {
	r, clk, ctx := newRegistry(t)
	var signed atomic.Int32
	r.WrapSigner(func(sign func([]byte, string, time.Duration) (*x509.Certificate, []byte, error)) func([]byte, string, time.Duration) (*x509.Certificate, []byte, error) {
		return func(csr []byte, cluster string, v time.Duration) (*x509.Certificate, []byte, error) {
			signed.Add(1)
			return sign(csr, cluster, v)
		}
	})
	good, _, err := r.CreateToken(ctx, registry.TokenOptions{TTL: time.Hour, Usages: 1})
	if err != nil {
		t.Fatal(err)
	}
	revoked, _, err := r.CreateToken(ctx, registry.TokenOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RevokeToken(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	short, _, err := r.CreateToken(ctx, registry.TokenOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := registry.ParseToken(good)
	bad := map[string]string{
		"malformed":    "not-a-token",
		"unknown":      "zzzzzz.0123456789abcdef",
		"wrong secret": id + ".0123456789abcdef",
		"revoked":      revoked,
	}
	for name, tok := range bad {
		if _, err := register(t, r, ctx, tok, "bad", "uid-"+name); !errors.Is(err, registry.ErrInvalidToken) {
			t.Errorf("%s token: %v, want ErrInvalidToken", name, err)
		}
	}
	clk.Step(2 * time.Minute)
	if _, err := register(t, r, ctx, short, "bad", "uid-expired"); !errors.Is(err, registry.ErrInvalidToken) {
		t.Errorf("expired token: %v, want ErrInvalidToken", err)
	}
	if n := signed.Load(); n != 0 {
		t.Fatalf("the signer ran %d times for bad tokens", n)
	}
	if _, err := register(t, r, ctx, good, "eu1", "uid-good"); err != nil {
		t.Fatal(err)
	}
	if _, err := register(t, r, ctx, good, "eu2", "uid-used-up"); !errors.Is(err, registry.ErrInvalidToken) {
		t.Errorf("used-up token: %v, want ErrInvalidToken", err)
	}
	if n := signed.Load(); n != 1 {
		t.Fatalf("the signer ran %d times, want once (for the good token)", n)
	}
}
