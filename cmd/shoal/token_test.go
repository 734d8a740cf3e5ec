// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
)

func TestSelectToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, tok string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flagFile, ctxFile, empty := write("flag", "from-flag\n"), write("ctx", "from-context"), write("empty", " \n")
	t.Cleanup(func() { globalHubFlags = hubFlags{} })
	tests := []struct {
		name, flag, env, ctxTokenFile, want, wantErr string
	}{
		{name: "none"},
		{name: "context", ctxTokenFile: ctxFile, want: "from-context"},
		{name: "env over context", env: "from-env", ctxTokenFile: ctxFile, want: "from-env"},
		{name: "flag over env", flag: flagFile, env: "from-env", ctxTokenFile: ctxFile, want: "from-flag"},
		{name: "empty file", flag: empty, wantErr: "is empty"},
		{name: "missing file", flag: filepath.Join(dir, "nope"), wantErr: "read the ID token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			globalHubFlags = hubFlags{tokenFile: tt.flag}
			t.Setenv(configv1alpha1.TokenEnv, tt.env)
			tok := selectToken(&configv1alpha1.Context{TokenFile: tt.ctxTokenFile})
			if tt.want == "" && tt.wantErr == "" {
				if tok != nil {
					t.Fatalf("a token without any source: %+v", tok)
				}
				return
			}
			if tok == nil || !tok.RequireTransportSecurity() {
				t.Fatalf("token %+v", tok)
			}
			md, err := tok.GetRequestMetadata(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || md["authorization"] != "Bearer "+tt.want {
				t.Fatalf("metadata %v, %v; want Bearer %s", md, err, tt.want)
			}
		})
	}
}

func TestTokenFileReadAtEveryCall(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := &bearerToken{file: p}
	if md, _ := tok.GetRequestMetadata(context.Background()); md["authorization"] != "Bearer one" {
		t.Fatalf("first call: %v", md)
	}
	if err := os.WriteFile(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if md, _ := tok.GetRequestMetadata(context.Background()); md["authorization"] != "Bearer two" {
		t.Fatalf("after a refresh: %v", md)
	}
}

func TestBesideConfig(t *testing.T) {
	for _, tt := range []struct{ config, p, want string }{
		{"/home/a/.shoal/config", "", ""},
		{"/home/a/.shoal/config", "alice.key", "/home/a/.shoal/alice.key"},
		{"/home/a/.shoal/config", "/etc/shoal/alice.key", "/etc/shoal/alice.key"},
		{"config", "k/alice.key", "k/alice.key"},
	} {
		if got := besideConfig(tt.config, tt.p); got != tt.want {
			t.Errorf("besideConfig(%q, %q) = %q, want %q", tt.config, tt.p, got, tt.want)
		}
	}
}

func TestUserCreateFlags(t *testing.T) {
	for _, tt := range []struct {
		name    string
		f       userCreateFlags
		wantErr string
		wantKey string
	}{
		{name: "hub key", f: userCreateFlags{out: "a.yaml"}},
		{name: "csr gets a default key file", f: userCreateFlags{csr: "a.csr"}, wantKey: "alice.key"},
		{name: "csr with key file", f: userCreateFlags{csr: "a.csr", keyFile: "k.pem"}, wantKey: "k.pem"},
		{name: "key file without csr", f: userCreateFlags{keyFile: "k.pem"}, wantErr: "--key-file"},
		{name: "group with out", f: userCreateFlags{oidcGroup: "ml", out: "x"}, wantErr: "--oidc-group"},
		{name: "group with csr", f: userCreateFlags{oidcGroup: "ml", csr: "x"}, wantErr: "--oidc-group"},
		{name: "token file without oidc user", f: userCreateFlags{oidcTokenFile: "t"}, wantErr: "--oidc-token-file"},
		{name: "validity for an oidc user without csr", f: userCreateFlags{oidcUsername: "u", validity: time.Hour}, wantErr: "no certificate"},
		{name: "validity under a second", f: userCreateFlags{validity: time.Millisecond}, wantErr: "at least 1s"},
		{name: "oidc user with csr and validity", f: userCreateFlags{oidcUsername: "u", csr: "a.csr", validity: time.Hour}, wantKey: "alice.key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			err := f.check("alice")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || f.keyFile != tt.wantKey {
				t.Fatalf("check: %v, key file %q; want %q", err, f.keyFile, tt.wantKey)
			}
		})
	}
}

func TestNewUserKey(t *testing.T) {
	keyPEM, csrPEM, err := newUserKey()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(keyPEM), "PRIVATE KEY") || !strings.Contains(string(csrPEM), "CERTIFICATE REQUEST") {
		t.Fatalf("key or CSR not PEM")
	}
}
