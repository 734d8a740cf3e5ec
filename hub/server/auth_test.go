// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/users"
)

// fakeAgents accepts the serials it holds for each cluster.
type fakeAgents map[string]string

func (f fakeAgents) AuthorizeAgent(_ context.Context, cluster, serial string) error {
	if f[cluster] != serial {
		return fmt.Errorf("%w: cluster %q", registry.ErrCertificateRevoked, cluster)
	}
	return nil
}

// fakeUsers knows the principals of user names; the bootstrap admin is admin.
type fakeUsers map[string]users.Principal

func (f fakeUsers) Authenticate(_ context.Context, name, _ string, bootstrap bool) (users.Principal, error) {
	if bootstrap {
		return users.Principal{Name: v1alpha1.BootstrapAdminName, Bindings: []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleAdmin}}}, nil
	}
	p, ok := f[name]
	if !ok {
		return users.Principal{}, errs.Denied("user %q unknown", name)
	}
	return p, nil
}

// AuthenticateOIDC maps OIDC usernames to the principals of the same key.
func (f fakeUsers) AuthenticateOIDC(_ context.Context, id users.OIDCIdentity) (users.Principal, error) {
	p, ok := f["oidc/"+id.Username]
	if !ok {
		return users.Principal{}, errs.Denied("OIDC username %q unknown", id.Username)
	}
	p.Method = users.MethodOIDC
	return p, nil
}

// fakeTokens verifies the tokens it knows; any other is invalid.
type fakeTokens map[string]users.OIDCIdentity

func (f fakeTokens) Verify(_ context.Context, raw string) (users.OIDCIdentity, error) {
	if raw == "expired" {
		return users.OIDCIdentity{}, errs.Of(users.ErrTokenExpired, "token expired at 2026-01-01T00:00:00Z")
	}
	id, ok := f[raw]
	if !ok {
		return users.OIDCIdentity{}, errs.Of(users.ErrUnauthenticated, "invalid ID token: bad signature")
	}
	return id, nil
}

// withPeer returns a context whose peer presented cert (verified), or none.
func withPeer(cert *x509.Certificate) context.Context {
	info := credentials.TLSInfo{State: tls.ConnectionState{}}
	if cert != nil {
		info.State.VerifiedChains = [][]*x509.Certificate{{cert}}
	}
	return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: info})
}

func TestAuthorize(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	issue := func(cn string, orgs ...string) *x509.Certificate {
		p, _, err := ca.ClientCertificate(cn, orgs, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := pki.ParseCertificatePEM(p)
		return c
	}
	admin := issue(pki.AdminCommonName, pki.AdminGroup)
	agent := issue(pki.AgentCommonName("eu1"), pki.AgentGroup)
	stale := issue(pki.AgentCommonName("eu1"), pki.AgentGroup)
	nobody := issue("someone", "people")
	alice := issue(pki.UserCommonName("alice"), pki.UserGroup)
	auth := authorizer{agents: fakeAgents{"eu1": pki.SerialString(agent)},
		users: fakeUsers{"alice": {Name: "alice", Bindings: []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleViewer, Queue: "a"}}}}}

	const (
		register  = shoalv1.Clusters_Register_FullMethodName
		heartbeat = shoalv1.Clusters_Heartbeat_FullMethodName
		list      = shoalv1.Clusters_ListClusters_FullMethodName
		submit    = "/shoal.v1alpha1.Jobs/Submit"
	)
	tests := []struct {
		name   string
		cert   *x509.Certificate
		method string
		want   codes.Code
	}{
		{"register without certificate", nil, register, codes.OK},
		{"admin call without certificate", nil, list, codes.Unauthenticated},
		{"agent call without certificate", nil, heartbeat, codes.Unauthenticated},
		{"admin lists clusters", admin, list, codes.OK},
		{"admin submits jobs", admin, submit, codes.OK},
		{"admin heartbeats", admin, heartbeat, codes.PermissionDenied},
		{"agent heartbeats", agent, heartbeat, codes.OK},
		{"agent lists clusters", agent, list, codes.PermissionDenied},
		{"agent submits jobs", agent, submit, codes.PermissionDenied},
		{"revoked agent certificate", stale, heartbeat, codes.PermissionDenied},
		{"certificate naming nobody", nobody, list, codes.PermissionDenied},
		{"viewer lists clusters", alice, list, codes.PermissionDenied},
		{"viewer heartbeats", alice, heartbeat, codes.PermissionDenied},
		{"viewer asks can-i", alice, shoalv1.Users_CanI_FullMethodName, codes.OK},
		{"unknown method", admin, "/shoal.v1alpha1.Jobs/Nothing", codes.PermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, _, err := auth.authorize(withPeer(tt.cert), tt.method, nil)
			if got := status.Code(err); got != tt.want {
				t.Fatalf("code %s (%v), want %s", got, err, tt.want)
			}
			if err == nil && tt.cert != nil {
				if id, ok := IdentityFrom(ctx); !ok || id.Serial != pki.SerialString(tt.cert) {
					t.Fatalf("identity not in context: %+v", id)
				}
			}
		})
	}
}

func TestAuthorizeToken(t *testing.T) {
	viewer := users.Principal{Name: "dave", Bindings: []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleViewer, Queue: "a"}}}
	fu := fakeUsers{"oidc/dave@example.com": viewer}
	ft := fakeTokens{"good": {Username: "dave@example.com"}, "stranger": {Username: "eve@example.com"}}
	withToken := func(tok string) context.Context {
		ctx := withPeer(nil)
		if tok != "" {
			ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", "Bearer "+tok))
		}
		return ctx
	}
	const (
		canI      = shoalv1.Users_CanI_FullMethodName
		list      = shoalv1.Clusters_ListClusters_FullMethodName
		heartbeat = shoalv1.Clusters_Heartbeat_FullMethodName
	)
	tests := []struct {
		name, token, method string
		tokens              TokenVerifier
		want                codes.Code
		msg                 string
	}{
		{"no token", "", canI, ft, codes.Unauthenticated, "OIDC ID token is required"},
		{"hub without an issuer", "good", canI, nil, codes.Unauthenticated, "accepts no bearer tokens"},
		{"valid token", "good", canI, ft, codes.OK, ""},
		{"valid token, no right", "good", list, ft, codes.PermissionDenied, `user "dave" may not list clusters`},
		{"valid token on an agent method", "good", heartbeat, ft, codes.PermissionDenied, "is for agents"},
		{"bad token", "forged", canI, ft, codes.Unauthenticated, "invalid ID token"},
		{"expired token", "expired", canI, ft, codes.Unauthenticated, "token expired"},
		{"unknown identity", "stranger", canI, ft, codes.PermissionDenied, "eve@example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auth := authorizer{users: fu}
			if tt.tokens != nil {
				auth.tokens = tt.tokens
			}
			ctx, c, err := auth.authorize(withToken(tt.token), tt.method, nil)
			if got := status.Code(err); got != tt.want {
				t.Fatalf("code %s (%v), want %s", got, err, tt.want)
			}
			if !strings.Contains(status.Convert(err).Message(), tt.msg) {
				t.Fatalf("message %q lacks %q", status.Convert(err).Message(), tt.msg)
			}
			if err != nil {
				return
			}
			if p, ok := PrincipalFrom(ctx); !ok || p.Name != "dave" || p.Method != users.MethodOIDC {
				t.Fatalf("principal %+v", p)
			}
			if c.user != "dave" || c.auth != users.MethodOIDC || c.oidcUser != "dave@example.com" {
				t.Fatalf("audit call %+v", c)
			}
		})
	}
}
