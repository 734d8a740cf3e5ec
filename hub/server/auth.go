// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/x509"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
)

// Methods open to callers by role (full gRPC method names).
var (
	// publicMethods need no client certificate.
	publicMethods = map[string]bool{
		shoalv1.Clusters_Register_FullMethodName: true,
	}
	// agentMethods need an agent certificate of a registered cluster.
	agentMethods = map[string]bool{
		shoalv1.Clusters_Heartbeat_FullMethodName:          true,
		shoalv1.Clusters_ReportInventory_FullMethodName:    true,
		shoalv1.Clusters_ReportGitOpsStatus_FullMethodName: true,
	}
)

// AgentAuthorizer checks that an agent certificate is still current.
type AgentAuthorizer interface {
	AuthorizeAgent(ctx context.Context, cluster, serial string) error
}

type identityKey struct{}

// IdentityFrom returns the caller's identity set by the auth interceptor.
func IdentityFrom(ctx context.Context) (pki.Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(pki.Identity)
	return id, ok
}

// authenticator decides who may call what: Register is public, agent
// methods need the agent certificate of a registered cluster, every other
// method the admin certificate.
type authenticator struct{ agents AgentAuthorizer }

func (a authenticator) authorize(ctx context.Context, method string) (context.Context, error) {
	if publicMethods[method] {
		return ctx, nil
	}
	cert := peerCertificate(ctx)
	if cert == nil {
		return ctx, status.Error(codes.Unauthenticated, "a client certificate is required: "+
			"use the shoal config written by shoal-hub, or register the agent with a join token")
	}
	id, err := pki.IdentityOf(cert)
	if err != nil {
		return ctx, status.Error(codes.PermissionDenied, err.Error())
	}
	switch {
	case agentMethods[method] && id.Role == pki.RoleAgent:
		if err := a.agents.AuthorizeAgent(ctx, id.Cluster, id.Serial); err != nil {
			return ctx, toStatus(ctx, method, err)
		}
	case agentMethods[method]:
		return ctx, status.Errorf(codes.PermissionDenied, "%s is for agents; %s is %s", shortMethod(method), cert.Subject.CommonName, id.Role)
	case id.Role != pki.RoleAdmin:
		return ctx, status.Errorf(codes.PermissionDenied, "%s needs the admin identity; %s is %s", shortMethod(method), cert.Subject.CommonName, id.Role)
	}
	return context.WithValue(ctx, identityKey{}, id), nil
}

// peerCertificate is the verified client certificate of the call, or nil.
func peerCertificate(ctx context.Context) *x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return info.State.VerifiedChains[0][0]
}

func (a authenticator) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := a.authorize(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (a authenticator) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := a.authorize(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
}

type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *wrappedStream) Context() context.Context { return w.ctx }

// shortMethod turns /shoal.v1alpha1.Clusters/Register into Clusters/Register.
func shortMethod(full string) string {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndex(full, "."); i >= 0 {
		return full[i+1:]
	}
	return full
}
