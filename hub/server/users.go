// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/users"
)

// usersServer serves the Users service.
type usersServer struct {
	shoalv1.UnimplementedUsersServer
	users *users.Service
	caPEM []byte
	// oidc: the hub verifies OIDC ID tokens, so OIDC bindings apply.
	oidc bool
}

func (s *usersServer) CreateUser(ctx context.Context, req *shoalv1.CreateUserRequest) (*shoalv1.CreateUserResponse, error) {
	u := &v1alpha1.User{Spec: v1alpha1.UserSpec{Bindings: make([]v1alpha1.RoleBinding, 0, len(req.Bindings))}}
	u.Name = req.Name
	u.Spec.OIDCUsername, u.Spec.OIDCGroup = req.OidcUsername, req.OidcGroup
	if !s.oidc && (req.OidcUsername != "" || req.OidcGroup != "") {
		return nil, errs.Precondition("this hub verifies no OIDC ID tokens, so an OIDC binding would never apply",
			"start shoal-hub with --oidc-issuer-url and --oidc-client-id")
	}
	for _, b := range req.Bindings {
		u.Spec.Bindings = append(u.Spec.Bindings, v1alpha1.RoleBinding{Role: v1alpha1.UserRole(b.Role), Queue: b.Queue})
	}
	validity, err := requestSeconds("cert_validity_seconds", req.CertValiditySeconds)
	if err != nil {
		return nil, err
	}
	stored, creds, err := s.users.Create(ctx, u, users.CreateOptions{CSR: req.CsrPem, Validity: validity})
	if err != nil {
		return nil, err
	}
	o, err := object(stored, revisionOf(stored.ResourceVersion))
	if err != nil {
		return nil, err
	}
	return &shoalv1.CreateUserResponse{User: o, CertPem: creds.CertPEM, KeyPem: creds.KeyPEM, CaPem: s.caPEM}, nil
}

func (s *usersServer) ListUsers(ctx context.Context, _ *shoalv1.ListUsersRequest) (*shoalv1.ListUsersResponse, error) {
	all, err := s.users.List(ctx)
	if err != nil {
		return nil, err
	}
	out := &shoalv1.ListUsersResponse{Items: make([]*shoalv1.Object, 0, len(all))}
	for _, u := range all {
		o, err := object(u, revisionOf(u.ResourceVersion))
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, o)
	}
	return out, nil
}

func (s *usersServer) RevokeUser(ctx context.Context, req *shoalv1.RevokeUserRequest) (*shoalv1.Object, error) {
	var u *v1alpha1.User
	var err error
	switch {
	case (req.Name == "") == (req.Serial == ""):
		return nil, status.Error(codes.InvalidArgument, "revoke needs exactly one of name and serial")
	case req.Serial != "":
		u, err = s.users.RevokeSerial(ctx, req.Serial)
	default:
		u, err = s.users.Revoke(ctx, req.Name)
	}
	if err != nil {
		return nil, err
	}
	return object(u, revisionOf(u.ResourceVersion))
}

// CanI evaluates the same rules as the interceptor for the caller.
func (s *usersServer) CanI(ctx context.Context, req *shoalv1.CanIRequest) (*shoalv1.CanIResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	verb, res := users.Verb(req.Verb), users.Resource(req.Resource)
	if !slices.Contains(users.Verbs, verb) {
		return nil, status.Errorf(codes.InvalidArgument, "verb %q is not one of %v", req.Verb, users.Verbs)
	}
	if !slices.Contains(users.Resources, res) {
		return nil, status.Errorf(codes.InvalidArgument, "resource %q is not one of %v", req.Resource, users.Resources)
	}
	r := users.Request{Verb: verb, Resource: res, Queue: req.Queue, AnyQueue: req.Queue == "", Owner: p.Name}
	d := users.Allowed(p, r)
	return &shoalv1.CanIResponse{Allowed: d.Allowed, Reason: d.Reason, User: p.Name}, nil
}

// WhoAmI says who the interceptor took the caller for.
func (s *usersServer) WhoAmI(ctx context.Context, _ *shoalv1.WhoAmIRequest) (*shoalv1.WhoAmIResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	out := &shoalv1.WhoAmIResponse{User: p.Name, Method: string(p.Method), Serial: p.Serial,
		OidcUsername: p.OIDCUsername, OidcGroups: p.Groups, GroupRecords: p.GroupRecords}
	for _, b := range p.Bindings {
		out.Bindings = append(out.Bindings, &shoalv1.RoleBinding{Role: string(b.Role), Queue: b.Queue})
	}
	if cert := peerCertificate(ctx); cert != nil && p.Method == users.MethodCertificate {
		out.NotAfterUnix = cert.NotAfter.Unix()
	}
	return out, nil
}

// RenewCertificate signs the calling user's CSR over the session of its
// current certificate; the old serial is refused from then on.
func (s *usersServer) RenewCertificate(ctx context.Context, req *shoalv1.RenewUserCertificateRequest) (*shoalv1.RenewUserCertificateResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if p.Method != users.MethodCertificate {
		return nil, status.Errorf(codes.PermissionDenied, "renewal needs the user's current client certificate; %s authenticated by %s", p.Name, p.Method)
	}
	validity, err := requestSeconds("validity_seconds", req.ValiditySeconds)
	if err != nil {
		return nil, err
	}
	u, certPEM, err := s.users.Renew(ctx, p.Name, p.Serial, req.CsrPem, validity)
	if err != nil {
		return nil, err
	}
	o, err := object(u, revisionOf(u.ResourceVersion))
	if err != nil {
		return nil, err
	}
	return &shoalv1.RenewUserCertificateResponse{User: o, CertPem: certPEM, CaPem: s.caPEM}, nil
}
