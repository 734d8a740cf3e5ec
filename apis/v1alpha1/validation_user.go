// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"

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
	return errs
}
