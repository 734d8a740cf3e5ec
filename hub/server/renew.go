// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
)

// RenewCertificate signs a new certificate for the calling agent's cluster
// (the cluster and the current serial come from the certificate of the
// call, never from the request).
func (s *clustersServer) RenewCertificate(ctx context.Context, req *shoalv1.RenewCertificateRequest) (*shoalv1.RenewCertificateResponse, error) {
	id, err := agentIdentity(ctx)
	if err != nil {
		return nil, err
	}
	rn, err := s.reg.Renew(ctx, id.Cluster, id.Serial, req.CsrPem)
	if err != nil {
		return nil, err
	}
	return &shoalv1.RenewCertificateResponse{CertificatePem: rn.CertificatePEM, CaPem: rn.CAPEM}, nil
}

// IssueHubCredentials hands the calling agent a fresh hub-cluster kubeconfig.
func (s *clustersServer) IssueHubCredentials(ctx context.Context, _ *shoalv1.IssueHubCredentialsRequest) (*shoalv1.IssueHubCredentialsResponse, error) {
	id, err := agentIdentity(ctx)
	if err != nil {
		return nil, err
	}
	kc, err := s.reg.IssueHubCredentials(ctx, id.Cluster, id.Serial)
	if err != nil {
		return nil, err
	}
	return &shoalv1.IssueHubCredentialsResponse{HubKubeconfig: kc}, nil
}

// mustRenew reports whether the call's certificate was issued by a CA
// before the hub's current one: the agent is told to renew at once.
func mustRenew(ctx context.Context, ca *pki.CA) bool {
	cert := peerCertificate(ctx)
	return cert != nil && !ca.Signed(cert)
}
