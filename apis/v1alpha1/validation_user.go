// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateUser returns every problem of a User's name and spec, each with
// its field path.
func ValidateUser(u *User) field.ErrorList {
	var errs field.ErrorList
	np := field.NewPath("metadata", "name")
	switch u.Name {
	case "":
		errs = append(errs, field.Required(np, "a user name"))
	case BootstrapAdminName:
		errs = append(errs, field.Invalid(np, u.Name, "is the hub's bootstrap admin; choose another name"))
	default:
		for _, msg := range validation.IsDNS1123Label(u.Name) {
			errs = append(errs, field.Invalid(np, u.Name, msg))
		}
	}
	p := field.NewPath("spec", "bindings")
	if len(u.Spec.Bindings) == 0 {
		errs = append(errs, field.Required(p, "at least one role binding (--role and --queue)"))
	}
	for i, b := range u.Spec.Bindings {
		bp := p.Index(i)
		if !slices.Contains(UserRoles, b.Role) {
			errs = append(errs, field.NotSupported(bp.Child("role"), b.Role, UserRoles))
			continue
		}
		switch {
		case b.Role == UserRoleAdmin && b.Queue != "":
			errs = append(errs, field.Forbidden(bp.Child("queue"), "the admin role applies to every queue; leave the queue empty"))
		case b.Role != UserRoleAdmin:
			errs = append(errs, ValidateQueueName(b.Queue, bp.Child("queue"))...)
		}
	}
	errs = append(errs, validateOIDCName(u.Spec.OIDCUsername, field.NewPath("spec", "oidcUsername"))...)
	errs = append(errs, validateOIDCName(u.Spec.OIDCGroup, field.NewPath("spec", "oidcGroup"))...)
	if u.Spec.OIDCUsername != "" && u.Spec.OIDCGroup != "" {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "oidcGroup"),
			"a group binding is a record of its own; give oidcUsername or oidcGroup, not both"))
	}
	return errs
}

// MaxOIDCNameLength bounds an OIDC username or group a record binds.
const MaxOIDCNameLength = 256

// validateOIDCName checks an OIDC username or group ("" is none): at most
// MaxOIDCNameLength bytes, no spaces or control characters.
func validateOIDCName(s string, p *field.Path) field.ErrorList {
	if s == "" {
		return nil
	}
	if len(s) > MaxOIDCNameLength {
		return field.ErrorList{field.TooLong(p, "", MaxOIDCNameLength)}
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return field.ErrorList{field.Invalid(p, s, "may not contain spaces or control characters")}
		}
	}
	return nil
}
