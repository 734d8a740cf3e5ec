// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"crypto/x509"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/audit"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/users"
)

// AgentAuthorizer checks that an agent certificate is still current.
type AgentAuthorizer interface {
	AuthorizeAgent(ctx context.Context, cluster, serial string) error
}

// UserAuthenticator maps a verified user certificate (or, bootstrap true,
// the bootstrap admin certificate) to its principal, reading the user
// record at every call so that a revocation applies at once (hub/users).
type UserAuthenticator interface {
	Authenticate(ctx context.Context, name, serial string, bootstrap bool) (users.Principal, error)
	// AuthenticateOIDC maps a verified ID token's identity to its principal.
	AuthenticateOIDC(ctx context.Context, id users.OIDCIdentity) (users.Principal, error)
}

// TokenVerifier verifies a bearer ID token (users.TokenVerifier).
type TokenVerifier interface {
	Verify(ctx context.Context, raw string) (users.OIDCIdentity, error)
}

// JobReader reads the job a call names, for its queue and owner (hub/jobs).
type JobReader interface {
	Get(ctx context.Context, name string) (*v1alpha1.Job, int64, error)
}

// errorNoJobs means a server built without a JobReader got a job call.
var errorNoJobs = status.Error(codes.Unimplemented, "the hub serves no jobs")

type identityKey struct{}

type principalKey struct{}

// IdentityFrom returns the caller's identity set by the auth interceptor.
func IdentityFrom(ctx context.Context) (pki.Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(pki.Identity)
	return id, ok
}

// PrincipalFrom returns the calling user (or bootstrap admin) set by the
// auth interceptor; agents and public calls have none.
func PrincipalFrom(ctx context.Context) (users.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(users.Principal)
	return p, ok
}

type submittedKey struct{}

// submittedJob is the job of a Submit call as its authorization decoded
// it from raw, or raw decoded when the call was not authorized with one
// (a hub without users).
func submittedJob(ctx context.Context, raw []byte) (*v1alpha1.Job, error) {
	if j, ok := ctx.Value(submittedKey{}).(*v1alpha1.Job); ok {
		return j, nil
	}
	return v1alpha1.DecodeJob(raw)
}

// principal is PrincipalFrom for handlers: a call without one is refused
// (the interceptor sets it for every user method, so this fails closed).
func principal(ctx context.Context) (users.Principal, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return users.Principal{}, errs.Denied("this call needs a user identity")
	}
	return p, nil
}

// authorizer decides who may call what, in one place, from the method
// table (methods.go): Register is public, agent methods need the agent
// certificate of a registered cluster, every other method a user (or the
// bootstrap admin) whose role bindings allow the method's verb on its
// resource in the queue of the object it names. Mutating calls are written
// to the audit log.
type authorizer struct {
	agents AgentAuthorizer
	users  UserAuthenticator
	// tokens verifies bearer ID tokens; nil: the hub accepts none.
	tokens TokenVerifier
	jobs   JobReader
	// services reads inference services for their authorization.
	services InferenceServices
	audit    *audit.Log
}

// call is what authorize learned about one call, for the audit log.
type call struct {
	method string
	user   string
	// auth is how the caller authenticated; oidcUser the token's username.
	auth     users.Method
	oidcUser string
	target   target
}

func (a authorizer) authorize(ctx context.Context, method string, req any) (context.Context, call, error) {
	c := call{method: method}
	m, ok := methods[method]
	if !ok {
		return ctx, c, status.Errorf(codes.PermissionDenied, "%s is not in the hub's authorization table", shortMethod(method))
	}
	if m.access == accessPublic {
		if m.target != nil && req != nil {
			c.target, _ = m.target(ctx, a, req)
		}
		return ctx, c, nil
	}
	cert := peerCertificate(ctx)
	if cert == nil {
		return a.authorizeToken(ctx, c, m, req)
	}
	id, err := pki.IdentityOf(cert)
	if err != nil {
		return ctx, c, status.Error(codes.PermissionDenied, err.Error())
	}
	c.auth = users.MethodCertificate
	switch {
	case m.access == accessAgent && id.Role == pki.RoleAgent:
		c.user = "agent:" + id.Cluster
		if err := a.agents.AuthorizeAgent(ctx, id.Cluster, id.Serial); err != nil {
			return ctx, c, toStatus(ctx, method, err)
		}
		return context.WithValue(ctx, identityKey{}, id), c, nil
	case m.access == accessAgent:
		return ctx, c, status.Errorf(codes.PermissionDenied, "%s is for agents; %s is %s", shortMethod(method), cert.Subject.CommonName, id.Role)
	case id.Role == pki.RoleAgent:
		c.user = "agent:" + id.Cluster
		return ctx, c, status.Errorf(codes.PermissionDenied, "%s needs a user identity; %s is an agent", shortMethod(method), cert.Subject.CommonName)
	}
	c.user = id.User
	if id.Role == pki.RoleAdmin {
		c.user = v1alpha1.BootstrapAdminName
	}
	if a.users == nil {
		return ctx, c, status.Error(codes.Internal, "the hub has no user authenticator")
	}
	p, err := a.users.Authenticate(ctx, id.User, id.Serial, id.Role == pki.RoleAdmin)
	if err != nil {
		return ctx, c, toStatus(ctx, method, err)
	}
	return a.authorizeUser(context.WithValue(ctx, identityKey{}, id), c, m, p, req)
}

// authorizeToken authenticates a call without a client certificate by its
// bearer ID token (metadata "authorization: Bearer …"), then authorizes it
// as authorizeUser does.
func (a authorizer) authorizeToken(ctx context.Context, c call, m method, req any) (context.Context, call, error) {
	raw, ok := bearerToken(ctx)
	if !ok {
		return ctx, c, status.Error(codes.Unauthenticated, "a client certificate or an OIDC ID token is required: "+
			"use the shoal config written by shoal-hub or `shoal user create`, pass --token-file or SHOAL_TOKEN, "+
			"or register the agent with a join token")
	}
	if a.tokens == nil || a.users == nil {
		return ctx, c, status.Error(codes.Unauthenticated, "this hub accepts no bearer tokens (shoal-hub runs without --oidc-issuer-url)")
	}
	c.auth = users.MethodOIDC
	oid, err := a.tokens.Verify(ctx, raw)
	if err != nil {
		return ctx, c, toStatus(ctx, c.method, err)
	}
	c.oidcUser, c.user = oid.Username, users.OIDCPrincipalPrefix+oid.Username
	if m.access == accessAgent {
		return ctx, c, status.Errorf(codes.PermissionDenied, "%s is for agents; OIDC user %q is not one", shortMethod(c.method), oid.Username)
	}
	p, err := a.users.AuthenticateOIDC(ctx, oid)
	if err != nil {
		return ctx, c, toStatus(ctx, c.method, err)
	}
	return a.authorizeUser(ctx, c, m, p, req)
}

// bearerToken is the call's "authorization: Bearer TOKEN" metadata.
func bearerToken(ctx context.Context) (string, bool) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return "", false
	}
	for _, v := range md.Get("authorization") {
		if scheme, tok, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "bearer") && tok != "" {
			return strings.TrimSpace(tok), true
		}
	}
	return "", false
}

// authorizeUser checks an authenticated user's principal p against the
// method's row.
func (a authorizer) authorizeUser(ctx context.Context, c call, m method, p users.Principal, req any) (context.Context, call, error) {
	method := c.method
	var err error
	c.user = p.Name
	ctx = context.WithValue(ctx, principalKey{}, p)
	switch m.access {
	case accessSelf:
		c.target.object = p.Name // the record it changes is its own
		return ctx, c, nil
	case accessUser:
		return ctx, c, nil
	}
	// Streams have no request here (nil): only targets that need none
	// (watchJobsTarget) are on streaming methods.
	if m.target != nil {
		if c.target, err = m.target(ctx, a, req); err != nil {
			return ctx, c, toStatus(ctx, method, err)
		}
		if c.target.job != nil {
			ctx = context.WithValue(ctx, submittedKey{}, c.target.job)
		}
	}
	r := users.Request{Verb: m.verb, Resource: m.res, Queue: c.target.queue, AnyQueue: !c.target.scoped,
		Owner: c.target.owner, AnyOwner: c.target.anyOwner}
	if d := users.Allowed(p, r); !d.Allowed {
		return ctx, c, toStatus(ctx, method, errs.Denied("%s: %s", shortMethod(method), d.Reason))
	}
	return ctx, c, nil
}

// record writes a mutating call to the audit log.
func (a authorizer) record(c call, err error) {
	if m, ok := methods[c.method]; !ok || !m.mutating {
		return
	}
	e := audit.Entry{User: c.user, Auth: string(c.auth), OIDCUsername: c.oidcUser, Method: shortMethod(c.method),
		Object: c.target.object, Queue: c.target.queue, Code: status.Code(err).String()}
	if err != nil {
		e.Error = status.Convert(err).Message()
	}
	_ = a.audit.Write(e)
}

// recordBatch writes one audit entry per job of a batch call that was
// answered (each with its own code); a call refused as a whole is one
// entry (record).
func (a authorizer) recordBatch(c call, entries []audit.Entry) {
	for _, e := range entries {
		e.User, e.Auth, e.OIDCUsername, e.Method = c.user, string(c.auth), c.oidcUser, shortMethod(c.method)
		_ = a.audit.Write(e)
	}
}

// peerCertificate is the verified client certificate of the call, or nil:
// the TLS peer's, or for a REST call through the in-process gateway the
// one its TLS session verified (gateway.go).
func peerCertificate(ctx context.Context) *x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	if _, ok := p.AuthInfo.(gatewayInfo); ok {
		return gatewayCertificate(ctx)
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return info.State.VerifiedChains[0][0]
}

func (a authorizer) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, c, err := a.authorize(ctx, info.FullMethod, req)
	if err != nil {
		a.record(c, err)
		return nil, err
	}
	var batch *batchAudit
	if methods[info.FullMethod].batch {
		batch = &batchAudit{}
		ctx = context.WithValue(ctx, batchAuditKey{}, batch)
	}
	resp, err := handler(ctx, req)
	err = toStatus(ctx, info.FullMethod, err)
	if batch != nil && err == nil {
		a.recordBatch(c, batch.take())
		return resp, nil
	}
	a.record(c, err)
	return resp, err
}

// stream authorizes a stream as a whole when it opens (without a request:
// methods.go) and audits it as unary does a call; a stream of batches
// writes its jobs' entries as its handler answers each batch
// (batchAudit.flush), and one entry more when it ends with an error.
func (a authorizer) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, c, err := a.authorize(ss.Context(), info.FullMethod, nil)
	if err != nil {
		a.record(c, err)
		return err
	}
	var batch *batchAudit
	if methods[info.FullMethod].batch {
		batch = &batchAudit{write: func(e []audit.Entry) { a.recordBatch(c, e) }}
		ctx = context.WithValue(ctx, batchAuditKey{}, batch)
	}
	err = toStatus(ctx, info.FullMethod, handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx}))
	if batch != nil {
		batch.flush()
		if err == nil {
			return nil
		}
	}
	a.record(c, err)
	return err
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
