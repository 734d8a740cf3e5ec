// SPDX-License-Identifier: Apache-2.0

package users

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/store"
)

// Kind is the store kind of User records.
const Kind = "users"

// Issuer issues user certificates and knows the bootstrap admin's (pki.CA).
type Issuer interface {
	// UserCertificate issues a certificate for a new key the issuer makes.
	UserCertificate(name string, validity time.Duration) (*x509.Certificate, []byte, []byte, error)
	// SignUserCSR signs the user's own CSR.
	SignUserCSR(csrPEM []byte, name string, validity time.Duration) (*x509.Certificate, []byte, error)
	AdminSerial() (string, error)
}

// Service creates, lists, revokes and authenticates users.
type Service struct {
	users       *store.Collection[*v1alpha1.User]
	bindings    *store.Collection[*oidcBinding]
	issuer      Issuer
	clock       clock.PassiveClock
	maxValidity time.Duration
}

// Option configures a Service.
type Option func(*Service)

// WithCertValidity sets the lifetime of user certificates, which is also
// the longest a request may ask for (0: pki's default, a year).
func WithCertValidity(d time.Duration) Option {
	return func(s *Service) {
		if d > 0 {
			s.maxValidity = d
		}
	}
}

// WithClock sets the service's clock (tests).
func WithClock(c clock.PassiveClock) Option { return func(s *Service) { s.clock = c } }

// DefaultCertValidity is the user certificate lifetime unless configured.
const DefaultCertValidity = 365 * 24 * time.Hour

// New returns the users service over st, issuing certificates with issuer.
func New(st *store.Store, issuer Issuer, opts ...Option) *Service {
	s := &Service{
		users:    store.NewCollection(st, Kind, store.JSONCodec[*v1alpha1.User]()),
		bindings: store.NewCollection(st, BindingsKind, store.JSONCodec[*oidcBinding]()),
		issuer:   issuer, clock: clock.RealClock{}, maxValidity: DefaultCertValidity,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Credentials are a new user's certificate and key in PEM; KeyPEM is empty
// when the certificate was signed for the user's CSR, CertPEM too when the
// user got no certificate (OIDC only, group records).
type Credentials struct {
	CertPEM, KeyPEM []byte
}

// CreateOptions say which certificate Create issues.
type CreateOptions struct {
	// CSR is the user's own CSR (PEM); without it the hub makes the key,
	// unless the user is bound to an OIDC username (then it gets no
	// certificate).
	CSR []byte
	// Validity is the certificate's lifetime (0: the service's, which is
	// also the maximum).
	Validity time.Duration
}

// validity checks a requested lifetime against the maximum.
func (s *Service) validity(d time.Duration, field string) (time.Duration, error) {
	switch {
	case d == 0:
		return s.maxValidity, nil
	case d < 0:
		return 0, errs.Of(ErrInvalid, "%s %s is negative", field, d)
	case d > s.maxValidity:
		return 0, errs.Of(ErrInvalid, "%s %s is longer than the hub's maximum %s (shoal-hub --user-cert-validity)", field, d, s.maxValidity)
	}
	return d, nil
}

// ErrInvalid means a request Create or Renew cannot act on (a CSR for a
// group record, a lifetime over the maximum).
var ErrInvalid = errors.New("invalid user request")

// Create validates u, claims its OIDC username or group, issues its
// certificate (for the key the hub makes, or for opts.CSR; none for a
// group record or an OIDC user without a CSR) and stores the record; a
// user of that name that exists already is store.ErrAlreadyExists (a
// revoked user too: its name stays taken, so that its old certificates
// stay refused).
func (s *Service) Create(ctx context.Context, in *v1alpha1.User, opts CreateOptions) (*v1alpha1.User, Credentials, error) {
	u := &v1alpha1.User{Spec: *in.Spec.DeepCopy()}
	u.Name = in.Name
	u.APIVersion, u.Kind = v1alpha1.APIVersion, v1alpha1.KindUser
	if errList := v1alpha1.ValidateUser(u); len(errList) > 0 {
		return nil, Credentials{}, &v1alpha1.InvalidError{Kind: v1alpha1.KindUser, Name: u.Name, Errs: errList}
	}
	if u.Spec.OIDCGroup != "" && len(opts.CSR) > 0 {
		return nil, Credentials{}, errs.Of(ErrInvalid, "user %q is a group binding (oidcGroup): it holds no certificate; drop the CSR", u.Name)
	}
	validity, err := s.validity(opts.Validity, "certificate validity")
	if err != nil {
		return nil, Credentials{}, err
	}
	if _, _, err := s.users.Get(ctx, u.Name); err == nil {
		return nil, Credentials{}, errs.Of(store.ErrAlreadyExists, "user %q exists; `shoal user list` shows the users", u.Name)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, Credentials{}, err
	}
	for _, b := range []struct {
		name  string
		group bool
	}{{u.Spec.OIDCUsername, false}, {u.Spec.OIDCGroup, true}} {
		if b.name == "" {
			continue
		}
		if err := s.claimBinding(ctx, b.name, b.group, u.Name); err != nil {
			return nil, Credentials{}, err
		}
	}
	var creds Credentials
	var cert *x509.Certificate
	switch {
	case len(opts.CSR) > 0:
		cert, creds.CertPEM, err = s.issuer.SignUserCSR(opts.CSR, u.Name, validity)
		u.Status.KeyFromCSR = true
	case u.Spec.OIDCUsername == "" && u.Spec.OIDCGroup == "":
		cert, creds.CertPEM, creds.KeyPEM, err = s.issuer.UserCertificate(u.Name, validity)
	}
	if err != nil {
		return nil, Credentials{}, fmt.Errorf("issue the certificate of user %q: %w", u.Name, err)
	}
	now := metav1.NewTime(s.clock.Now())
	u.CreationTimestamp = now
	if cert != nil {
		na := metav1.NewTime(cert.NotAfter)
		u.Status.Serial, u.Status.NotAfter = serialOf(cert), &na
	}
	rev, err := s.users.Create(ctx, u.Name, u)
	if errors.Is(err, store.ErrAlreadyExists) {
		return nil, Credentials{}, errs.Of(store.ErrAlreadyExists, "user %q exists; `shoal user list` shows the users", u.Name)
	}
	if err != nil {
		return nil, Credentials{}, err
	}
	return withRevision(u, rev), creds, nil
}

// Renew signs csrPEM as the new certificate of user name, whose current
// certificate (serial) made the call: the record takes the new serial and
// the old one joins RevokedSerials, refused from the next call on. A
// revoked user, a superseded serial or a user without a certificate is
// errs.ErrPermissionDenied.
func (s *Service) Renew(ctx context.Context, name, serial string, csrPEM []byte, validity time.Duration) (*v1alpha1.User, []byte, error) {
	validity, err := s.validity(validity, "certificate validity")
	if err != nil {
		return nil, nil, err
	}
	if name == v1alpha1.BootstrapAdminName {
		return nil, nil, errs.Denied("the bootstrap admin certificate is renewed by `shoal-hub reissue-admin` on the hub's machine")
	}
	cur, _, err := s.users.Get(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if err := renewable(cur, serial); err != nil {
		return nil, nil, err
	}
	cert, certPEM, err := s.issuer.SignUserCSR(csrPEM, name, validity)
	if err != nil {
		return nil, nil, err
	}
	now := metav1.NewTime(s.clock.Now())
	na := metav1.NewTime(cert.NotAfter)
	u, rev, err := s.users.GuaranteedUpdate(ctx, name, func(u *v1alpha1.User) (*v1alpha1.User, error) {
		if err := renewable(u, serial); err != nil { // a renewal or revocation won the race
			return nil, err
		}
		u = u.DeepCopy()
		u.Status.RevokedSerials = append(u.Status.RevokedSerials, serial)
		u.Status.Serial, u.Status.NotAfter, u.Status.KeyFromCSR, u.Status.RenewedTime = serialOf(cert), &na, true, &now
		return u, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return withRevision(u, rev), certPEM, nil
}

// renewable says whether serial is u's current, unrevoked certificate.
func renewable(u *v1alpha1.User, serial string) error {
	switch {
	case u.Status.Revoked:
		return errs.Denied("user %q was revoked; ask an admin for a new identity", u.Name)
	case u.Status.Serial == "" || u.Status.Serial != serial:
		return errs.Denied("certificate %s is not user %q's current certificate", serial, u.Name)
	}
	return nil
}

// List returns every user record, the bootstrap admin's (when it has
// revoked certificates) included.
func (s *Service) List(ctx context.Context) ([]*v1alpha1.User, error) {
	var out []*v1alpha1.User
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := s.users.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, it := range res.Items {
			out = append(out, withRevision(it.Object, it.Revision))
		}
		if res.Continue == "" {
			return out, nil
		}
		opts.Continue = res.Continue
	}
}

// Revoke revokes user name: every certificate of it is refused from the
// next call on. Name v1alpha1.BootstrapAdminName revokes the bootstrap
// admin's current certificate (shoal-hub reissue-admin issues a new one).
func (s *Service) Revoke(ctx context.Context, name string) (*v1alpha1.User, error) {
	if name == v1alpha1.BootstrapAdminName {
		serial, err := s.issuer.AdminSerial()
		if err != nil {
			return nil, err
		}
		return s.revokeBootstrap(ctx, serial)
	}
	now := metav1.NewTime(s.clock.Now())
	u, rev, err := s.users.GuaranteedUpdate(ctx, name, func(u *v1alpha1.User) (*v1alpha1.User, error) {
		u = u.DeepCopy()
		if !u.Status.Revoked {
			u.Status.Revoked, u.Status.RevokedTime = true, &now
			if u.Status.Serial != "" && !slices.Contains(u.Status.RevokedSerials, u.Status.Serial) {
				u.Status.RevokedSerials = append(u.Status.RevokedSerials, u.Status.Serial)
			}
		}
		return u, nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, errs.Of(store.ErrNotFound, "user %q not found; `shoal user list` shows the users", name)
	}
	if err != nil {
		return nil, err
	}
	return withRevision(u, rev), nil
}

// RevokeSerial revokes the user whose current certificate has serial (hex),
// or the bootstrap admin certificate of that serial.
func (s *Service) RevokeSerial(ctx context.Context, serial string) (*v1alpha1.User, error) {
	if admin, err := s.issuer.AdminSerial(); err == nil && admin == serial {
		return s.revokeBootstrap(ctx, serial)
	}
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, u := range all {
		if u.Name != v1alpha1.BootstrapAdminName && u.Status.Serial == serial {
			return s.Revoke(ctx, u.Name)
		}
	}
	return nil, errs.Of(store.ErrNotFound, "no user holds a certificate of serial %s; `shoal user list` shows the serials", serial)
}

// revokeBootstrap records serial in the bootstrap admin's record.
func (s *Service) revokeBootstrap(ctx context.Context, serial string) (*v1alpha1.User, error) {
	now := metav1.NewTime(s.clock.Now())
	add := func(u *v1alpha1.User) *v1alpha1.User {
		if !slices.Contains(u.Status.RevokedSerials, serial) {
			u.Status.RevokedSerials = append(u.Status.RevokedSerials, serial)
		}
		u.Status.RevokedTime = &now
		return u
	}
	for {
		u, rev, err := s.users.GuaranteedUpdate(ctx, v1alpha1.BootstrapAdminName, func(u *v1alpha1.User) (*v1alpha1.User, error) {
			return add(u.DeepCopy()), nil
		})
		if err == nil {
			return withRevision(u, rev), nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		u = &v1alpha1.User{Spec: v1alpha1.UserSpec{Bindings: []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleAdmin}}}}
		u.APIVersion, u.Kind, u.Name, u.CreationTimestamp = v1alpha1.APIVersion, v1alpha1.KindUser, v1alpha1.BootstrapAdminName, now
		rev, err = s.users.Create(ctx, u.Name, add(u))
		if err == nil {
			return withRevision(u, rev), nil
		}
		if !errors.Is(err, store.ErrAlreadyExists) {
			return nil, err
		}
	}
}

// bootstrapAdmin is the principal of the bootstrap admin certificate.
var bootstrapAdmin = []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleAdmin}}

// Authenticate returns the principal of a verified user certificate (name,
// serial) or of the bootstrap admin certificate (bootstrap true), reading
// the record now: a revoked, unknown or superseded certificate is
// errs.ErrPermissionDenied.
func (s *Service) Authenticate(ctx context.Context, name, serial string, bootstrap bool) (Principal, error) {
	if bootstrap {
		u, _, err := s.users.Get(ctx, v1alpha1.BootstrapAdminName)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return Principal{}, err
		case slices.Contains(u.Status.RevokedSerials, serial):
			return Principal{}, errs.Denied("the bootstrap admin certificate %s was revoked; "+
				"on the hub's machine run `shoal-hub reissue-admin` to issue a new one", serial)
		}
		return Principal{Name: v1alpha1.BootstrapAdminName, Bindings: bootstrapAdmin, Method: MethodCertificate, Serial: serial}, nil
	}
	u, _, err := s.users.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, errs.Denied("user %q is not known to this hub (deleted, or issued by another hub)", name)
	}
	if err != nil {
		return Principal{}, err
	}
	if u.Status.Revoked {
		return Principal{}, errs.Denied("user %q was revoked; ask an admin for a new identity", name)
	}
	if slices.Contains(u.Status.RevokedSerials, serial) {
		return Principal{}, errs.Denied("certificate %s is not user %q's current certificate: it was renewed; "+
			"use the config `shoal user renew` wrote", serial, name)
	}
	if u.Status.Serial != serial {
		return Principal{}, errs.Denied("certificate %s is not user %q's current certificate", serial, name)
	}
	return Principal{Name: u.Name, Bindings: u.Spec.Bindings, Method: MethodCertificate, Serial: serial}, nil
}

func serialOf(cert *x509.Certificate) string { return cert.SerialNumber.Text(16) }

func withRevision(u *v1alpha1.User, rev int64) *v1alpha1.User {
	u.ResourceVersion = strconv.FormatInt(rev, 10)
	return u
}
