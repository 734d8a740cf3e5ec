// SPDX-License-Identifier: Apache-2.0

package users_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/hub/users"
)

func newService(t *testing.T) (*users.Service, *pki.CA) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an embedded etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return users.New(st, ca), ca
}

func user(name string, bs ...v1alpha1.RoleBinding) *v1alpha1.User {
	u := &v1alpha1.User{Spec: v1alpha1.UserSpec{Bindings: bs}}
	u.Name = name
	return u
}

func TestCreateAuthenticateRevoke(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	sub := v1alpha1.RoleBinding{Role: v1alpha1.UserRoleSubmitter, Queue: "a/b"}
	u, creds, err := s.Create(ctx, user("alice", sub), users.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCertificatePEM(creds.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	id, err := pki.IdentityOf(cert)
	if err != nil || id.Role != pki.RoleUser || id.User != "alice" || id.Serial != u.Status.Serial {
		t.Fatalf("certificate identity %+v (%v), record serial %s", id, err, u.Status.Serial)
	}
	p, err := s.Authenticate(ctx, "alice", id.Serial, false)
	if err != nil || p.Name != "alice" || len(p.Bindings) != 1 || p.Bindings[0] != sub {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}
	if _, err := s.Authenticate(ctx, "alice", "123", false); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("another serial: %v, want ErrPermissionDenied", err)
	}
	if _, err := s.Authenticate(ctx, "nobody", id.Serial, false); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("unknown user: %v, want ErrPermissionDenied", err)
	}
	if _, _, err := s.Create(ctx, user("alice", sub), users.CreateOptions{}); !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("second create: %v, want ErrAlreadyExists", err)
	}
	var invalid *v1alpha1.InvalidError
	if _, _, err := s.Create(ctx, user("bob", v1alpha1.RoleBinding{Role: v1alpha1.UserRoleViewer}), users.CreateOptions{}); !errors.As(err, &invalid) {
		t.Errorf("viewer without a queue: %v, want InvalidError", err)
	}
	r, err := s.Revoke(ctx, "alice")
	if err != nil || !r.Status.Revoked || r.Status.RevokedTime == nil {
		t.Fatalf("Revoke = %+v, %v", r, err)
	}
	if _, err := s.Authenticate(ctx, "alice", id.Serial, false); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("revoked: %v, want ErrPermissionDenied", err)
	}
	if _, _, err := s.Create(ctx, user("alice", sub), users.CreateOptions{}); !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("create over a revoked user: %v, want ErrAlreadyExists", err)
	}
	if _, err := s.Revoke(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoke unknown: %v, want ErrNotFound", err)
	}
}

func TestRevokeBySerialAndBootstrapAdmin(t *testing.T) {
	s, ca := newService(t)
	ctx := context.Background()
	u, _, err := s.Create(ctx, user("carol", v1alpha1.RoleBinding{Role: v1alpha1.UserRoleAdmin}), users.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeSerial(ctx, u.Status.Serial); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, "carol", u.Status.Serial, false); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Errorf("revoked by serial: %v", err)
	}
	if _, err := s.RevokeSerial(ctx, "abc"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown serial: %v, want ErrNotFound", err)
	}

	certPEM, _, err := ca.AdminCertificate()
	if err != nil {
		t.Fatal(err)
	}
	old, _ := pki.ParseCertificatePEM(certPEM)
	oldSerial := pki.SerialString(old)
	if p, err := s.Authenticate(ctx, "", oldSerial, true); err != nil || p.Name != v1alpha1.BootstrapAdminName {
		t.Fatalf("bootstrap admin: %+v, %v", p, err)
	}
	if _, err := s.Revoke(ctx, v1alpha1.BootstrapAdminName); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, "", oldSerial, true); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Fatalf("revoked bootstrap admin: %v", err)
	}
	newPEM, _, err := ca.ReissueAdminCertificate()
	if err != nil {
		t.Fatal(err)
	}
	reissued, _ := pki.ParseCertificatePEM(newPEM)
	if pki.SerialString(reissued) == oldSerial {
		t.Fatal("reissued certificate has the old serial")
	}
	if _, err := s.Authenticate(ctx, "", pki.SerialString(reissued), true); err != nil {
		t.Fatalf("reissued bootstrap admin: %v", err)
	}
	if _, err := s.Authenticate(ctx, "", oldSerial, true); !errors.Is(err, errs.ErrPermissionDenied) {
		t.Fatalf("old bootstrap certificate after reissue: %v", err)
	}
}
