// SPDX-License-Identifier: Apache-2.0

package users

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/store"
)

// BindingsKind is the store kind of the OIDC index: one record per OIDC
// username or group a User binds, naming that User, so that a token is
// mapped to its record with one read. The User record is the truth: an
// index entry whose User is gone or binds another name is stale and
// ignored (a Create that failed half-way leaves one; the next Create of
// that name takes it over).
const BindingsKind = "oidcbindings"

// oidcBinding is an index record.
type oidcBinding struct {
	// User is the name of the User record that binds the name.
	User string `json:"user"`
}

// bindingKey is the index name of an OIDC username (group false) or group.
func bindingKey(name string, group bool) string {
	sum := sha256.Sum256([]byte(name))
	if group {
		return "g." + hex.EncodeToString(sum[:])
	}
	return "u." + hex.EncodeToString(sum[:])
}

// binds reports whether u is the live record of OIDC name (group or user).
func binds(u *v1alpha1.User, name string, group bool) bool {
	if group {
		return u.Spec.OIDCGroup == name
	}
	return u.Spec.OIDCUsername == name
}

// claimBinding points the index entry of name at user, unless a live
// record other than user binds it already (store.ErrAlreadyExists).
func (s *Service) claimBinding(ctx context.Context, name string, group bool, user string) error {
	key := bindingKey(name, group)
	what := "OIDC username"
	if group {
		what = "OIDC group"
	}
	for {
		_, err := s.bindings.Create(ctx, key, &oidcBinding{User: user})
		if err == nil || !errors.Is(err, store.ErrAlreadyExists) {
			return err
		}
		b, rev, err := s.bindings.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if b.User != user {
			owner, _, err := s.users.Get(ctx, b.User)
			switch {
			case err == nil && binds(owner, name, group) && !owner.Status.Revoked:
				return errs.Of(store.ErrAlreadyExists, "%s %q is bound to user %q already", what, name, b.User)
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
		// Stale, or revoked: take it over.
		if _, err := s.bindings.Update(ctx, key, &oidcBinding{User: user}, rev); !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
}

// boundRecord returns the live, unrevoked-or-not User record that binds
// OIDC name, or nil when none does.
func (s *Service) boundRecord(ctx context.Context, name string, group bool) (*v1alpha1.User, error) {
	b, _, err := s.bindings.Get(ctx, bindingKey(name, group))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u, _, err := s.users.Get(ctx, b.User)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !binds(u, name, group) {
		return nil, nil
	}
	return u, nil
}

// MaxTokenGroups bounds the groups of one token that are looked up; the
// groups after the first MaxTokenGroups grant nothing.
const MaxTokenGroups = 64

// OIDCPrincipalPrefix names a token's principal that no User record binds
// by username (it holds group bindings only); record names are DNS labels,
// so this cannot collide with a record's name (and job owner).
const OIDCPrincipalPrefix = "oidc:"

// AuthenticateOIDC maps a verified token identity to its principal, reading
// the records now: the bindings of the User that binds its username, plus
// those of every unrevoked group record of its groups. A revoked user is
// refused whatever its groups grant; an identity no record binds is
// errs.ErrPermissionDenied.
func (s *Service) AuthenticateOIDC(ctx context.Context, id OIDCIdentity) (Principal, error) {
	p := Principal{Name: OIDCPrincipalPrefix + id.Username, Method: MethodOIDC, OIDCUsername: id.Username, Groups: id.Groups}
	u, err := s.boundRecord(ctx, id.Username, false)
	if err != nil {
		return Principal{}, err
	}
	if u != nil {
		if u.Status.Revoked {
			return Principal{}, errs.Denied("user %q (OIDC username %q) was revoked; ask an admin for a new identity", u.Name, id.Username)
		}
		p.Name, p.Bindings = u.Name, append(p.Bindings, u.Spec.Bindings...)
	}
	groups := id.Groups
	if len(groups) > MaxTokenGroups {
		groups = groups[:MaxTokenGroups] // ignoring groups can only take rights away
	}
	for _, g := range groups {
		gr, err := s.boundRecord(ctx, g, true)
		if err != nil {
			return Principal{}, err
		}
		if gr != nil && !gr.Status.Revoked {
			p.Bindings = append(p.Bindings, gr.Spec.Bindings...)
			p.GroupRecords = append(p.GroupRecords, gr.Name)
		}
	}
	if u == nil && len(p.GroupRecords) == 0 {
		return Principal{}, errs.Denied("OIDC username %q is not bound to a user of this hub; an admin binds it with "+
			"`shoal user create NAME --oidc-username %s --role …`", id.Username, id.Username)
	}
	return p, nil
}
