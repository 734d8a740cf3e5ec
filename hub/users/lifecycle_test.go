// SPDX-License-Identifier: Apache-2.0

package users_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/users"
)

func csrPEM(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pki.NewCSR(key, cn)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCreateFromCSRAndRenew(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	sub := v1alpha1.RoleBinding{Role: v1alpha1.UserRoleSubmitter, Queue: "a/b"}
	u, creds, err := s.Create(ctx, user("alice", sub), users.CreateOptions{CSR: csrPEM(t, ""), Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(creds.KeyPEM) != 0 || !u.Status.KeyFromCSR {
		t.Fatalf("a CSR user got a hub key (%d bytes) or no KeyFromCSR: %+v", len(creds.KeyPEM), u.Status)
	}
	cert, err := pki.ParseCertificatePEM(creds.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if life := time.Until(cert.NotAfter); life > time.Hour || life < 50*time.Minute {
		t.Fatalf("certificate lives %s, want about 1h", life)
	}
	if id, err := pki.IdentityOf(cert); err != nil || id.User != "alice" {
		t.Fatalf("identity %+v, %v", id, err)
	}
	old := u.Status.Serial

	if _, _, err := s.Create(ctx, user("bob", sub), users.CreateOptions{CSR: csrPEM(t, "shoal:user:mallory")}); !errors.Is(err, pki.ErrBadCSR) {
		t.Errorf("a CSR naming another user: %v, want ErrBadCSR", err)
	}
	if _, _, err := s.Create(ctx, user("bob", sub), users.CreateOptions{Validity: 2 * users.DefaultCertValidity}); !errors.Is(err, users.ErrInvalid) {
		t.Errorf("validity over the maximum: %v, want ErrInvalid", err)
	}

	// Renewal: a new serial; the old one is refused, the new one works.
	r, certPEM, err := s.Renew(ctx, "alice", old, csrPEM(t, ""), 0)
	if err != nil {
		t.Fatal(err)
	}
	renewed, _ := pki.ParseCertificatePEM(certPEM)
	if r.Status.Serial == old || r.Status.Serial != pki.SerialString(renewed) || r.Status.RenewedTime == nil {
		t.Fatalf("after renewal: %+v", r.Status)
	}
	if _, err := s.Authenticate(ctx, "alice", old, false); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("old serial after renewal: %v, want ErrPermissionDenied", err)
	}
	if p, err := s.Authenticate(ctx, "alice", r.Status.Serial, false); err != nil || p.Serial != r.Status.Serial {
		t.Errorf("new serial: %+v, %v", p, err)
	}
	if _, _, err := s.Renew(ctx, "alice", old, csrPEM(t, ""), 0); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("renewing with the old serial: %v, want ErrPermissionDenied", err)
	}
	if _, _, err := s.Renew(ctx, v1alpha1.BootstrapAdminName, "1", csrPEM(t, ""), 0); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("renewing the bootstrap admin: %v, want ErrPermissionDenied", err)
	}
	if _, err := s.Revoke(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Renew(ctx, "alice", r.Status.Serial, csrPEM(t, ""), 0); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("renewing a revoked user: %v, want ErrPermissionDenied", err)
	}
}

func TestAuthenticateOIDC(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	sub := v1alpha1.RoleBinding{Role: v1alpha1.UserRoleSubmitter, Queue: "a/b"}
	view := v1alpha1.RoleBinding{Role: v1alpha1.UserRoleViewer, Queue: "a"}
	dave := user("dave", sub)
	dave.Spec.OIDCUsername = "dave@example.com"
	u, creds, err := s.Create(ctx, dave, users.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(creds.CertPEM) != 0 || u.Status.Serial != "" {
		t.Fatalf("an OIDC user without a CSR got a certificate: %+v", u.Status)
	}
	team := user("ml-team", view)
	team.Spec.OIDCGroup = "ml"
	if _, _, err := s.Create(ctx, team, users.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	twin := user("dave2", sub)
	twin.Spec.OIDCUsername = "dave@example.com"
	if _, _, err := s.Create(ctx, twin, users.CreateOptions{}); !errors.Is(err, store.ErrAlreadyExists) || !strings.Contains(err.Error(), `"dave"`) {
		t.Errorf("a second user for the same OIDC username: %v, want ErrAlreadyExists naming dave", err)
	}
	grp := user("ml-csr", view)
	grp.Spec.OIDCGroup = "ml2"
	if _, _, err := s.Create(ctx, grp, users.CreateOptions{CSR: csrPEM(t, "")}); !errors.Is(err, users.ErrInvalid) {
		t.Errorf("a group record with a CSR: %v, want ErrInvalid", err)
	}

	p, err := s.AuthenticateOIDC(ctx, users.OIDCIdentity{Username: "dave@example.com", Groups: []string{"ml", "other"}})
	if err != nil || p.Name != "dave" || p.Method != users.MethodOIDC || len(p.Bindings) != 2 || p.GroupRecords[0] != "ml-team" {
		t.Fatalf("dave with group ml: %+v, %v", p, err)
	}
	p, err = s.AuthenticateOIDC(ctx, users.OIDCIdentity{Username: "erin@example.com", Groups: []string{"ml"}})
	if err != nil || p.Name != users.OIDCPrincipalPrefix+"erin@example.com" || len(p.Bindings) != 1 || p.Bindings[0] != view {
		t.Fatalf("erin by group only: %+v, %v", p, err)
	}
	if _, err := s.AuthenticateOIDC(ctx, users.OIDCIdentity{Username: "eve@example.com", Groups: []string{"other"}}); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("unknown identity: %v, want ErrPermissionDenied", err)
	}
	if _, err := s.Revoke(ctx, "ml-team"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AuthenticateOIDC(ctx, users.OIDCIdentity{Username: "erin@example.com", Groups: []string{"ml"}}); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("revoked group record: %v, want ErrPermissionDenied", err)
	}
	if _, err := s.Revoke(ctx, "dave"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AuthenticateOIDC(ctx, users.OIDCIdentity{Username: "dave@example.com"}); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("revoked user: %v, want ErrPermissionDenied", err)
	}
	// The revoked user's OIDC username may be bound afresh by an admin.
	if _, _, err := s.Create(ctx, twin, users.CreateOptions{}); err != nil {
		t.Fatalf("binding a revoked user's OIDC username anew: %v", err)
	}
	if p, err := s.AuthenticateOIDC(ctx, users.OIDCIdentity{Username: "dave@example.com"}); err != nil || p.Name != "dave2" {
		t.Errorf("after the new binding: %+v, %v", p, err)
	}
}
