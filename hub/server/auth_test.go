// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
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
