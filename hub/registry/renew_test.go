// SPDX-License-Identifier: Apache-2.0

package registry_test

import (
	"errors"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
)

func serialOf(t *testing.T, certPEM []byte) string {
	t.Helper()
	c, err := pki.ParseCertificatePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pki.SerialString(c)
}

// TestRenew: a renewed certificate is accepted, the old one keeps working
// until the new one is first used and is refused from then on; a renewal
// whose response was lost is replaced by the next one; a certificate that is
// not the cluster's current one cannot renew; a CSR for another cluster is
// refused.
func TestRenew(t *testing.T) {
	r, _, ctx := newRegistry(t)
	tok, _, err := r.CreateToken(ctx, registry.TokenOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := register(t, r, ctx, tok, "eu1", "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	old := serialOf(t, reg.CertificatePEM)

	lost, err := r.Renew(ctx, "eu1", old, csr(t, pki.AgentCommonName("eu1")))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AuthorizeAgent(ctx, "eu1", old); err != nil {
		t.Fatalf("old certificate before the renewed one was used: %v", err)
	}
	rn, err := r.Renew(ctx, "eu1", old, csr(t, ""))
	if err != nil {
		t.Fatalf("renewing again after a lost response: %v", err)
	}
	if string(rn.CAPEM) != string(r.CA().BundlePEM()) {
		t.Error("renewal did not return the trust bundle")
	}
	next := serialOf(t, rn.CertificatePEM)
	if c, _ := pki.ParseCertificatePEM(rn.CertificatePEM); c.Subject.CommonName != pki.AgentCommonName("eu1") {
		t.Fatalf("renewed certificate CN %q", c.Subject.CommonName)
	}
	if err := r.AuthorizeAgent(ctx, "eu1", serialOf(t, lost.CertificatePEM)); !errors.Is(err, registry.ErrCertificateRevoked) {
		t.Fatalf("the replaced renewal's certificate: %v, want ErrCertificateRevoked", err)
	}
	if err := r.AuthorizeAgent(ctx, "eu1", next); err != nil {
		t.Fatalf("first use of the renewed certificate: %v", err)
	}
	if err := r.AuthorizeAgent(ctx, "eu1", next); err != nil {
		t.Fatalf("second use of the renewed certificate: %v", err)
	}
	if err := r.AuthorizeAgent(ctx, "eu1", old); !errors.Is(err, registry.ErrCertificateRevoked) {
		t.Fatalf("old certificate after the renewed one was used: %v, want ErrCertificateRevoked", err)
	}
	if _, err := r.Heartbeat(ctx, "eu1", next, registry.Beat{AgentVersion: "v", ClusterReachable: true, Message: "", HubClusterReachable: ptr.To(true)}); err != nil {
		t.Fatalf("heartbeat with the renewed certificate: %v", err)
	}
	if _, err := r.Renew(ctx, "eu1", old, csr(t, "")); !errors.Is(err, registry.ErrCertificateRevoked) {
		t.Fatalf("renewal with the revoked certificate: %v, want ErrCertificateRevoked", err)
	}
	if _, err := r.Renew(ctx, "eu1", next, csr(t, pki.AgentCommonName("us1"))); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("renewal asking for another cluster's identity: %v, want ErrInvalid", err)
	}
	if _, err := r.Renew(ctx, "nope", next, csr(t, "")); !errors.Is(err, registry.ErrCertificateRevoked) {
		t.Fatalf("renewal of an unknown cluster: %v, want ErrCertificateRevoked", err)
	}
	if _, err := r.IssueHubCredentials(ctx, "eu1", next); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("hub credentials from a hub without a management cluster: %v, want ErrNotFound", err)
	}
	if _, err := r.IssueHubCredentials(ctx, "eu1", old); !errors.Is(err, registry.ErrCertificateRevoked) {
		t.Fatalf("hub credentials for a revoked certificate: %v, want ErrCertificateRevoked", err)
	}
}
