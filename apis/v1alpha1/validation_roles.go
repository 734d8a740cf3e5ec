// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateRoles checks spec.roles: the gang form left out, role names
// unique DNS-1123 labels, member counts and requests in bounds, at least
// one GPU role and one accelerator resource for all GPU roles. The roles'
// templates are checked with the single-template form's rules.
func validateRoles(s *JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	const either = "set either spec.gang with spec.template (identical members) or spec.roles, not both"
	if !reflect.ValueOf(s.Gang).IsZero() {
		errs = append(errs, field.Forbidden(p.Child("gang"), either))
	}
	if !reflect.ValueOf(s.Template).IsZero() {
		errs = append(errs, field.Forbidden(p.Child("template"), either))
	}
	rp := p.Child("roles")
	seen := map[string]bool{}
	var total int64
	gpuRole := -1
	for i := range s.Roles {
		r := &s.Roles[i]
		ip := rp.Index(i)
		switch {
		case r.Name == "":
			errs = append(errs, field.Required(ip.Child("name"), "a DNS-1123 label such as launcher or worker"))
		case seen[r.Name]:
			errs = append(errs, field.Duplicate(ip.Child("name"), r.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(r.Name) {
				errs = append(errs, field.Invalid(ip.Child("name"), r.Name, msg))
			}
		}
		seen[r.Name] = true
		if r.Members < 1 {
			errs = append(errs, field.Invalid(ip.Child("members"), r.Members, "must be at least 1"))
		}
		total += int64(max(0, r.Members))
		switch {
		case r.MIG != nil && r.GPUsPerMember != 0:
			errs = append(errs, field.Forbidden(ip.Child("gpusPerMember"), "set either gpusPerMember or mig, not both"))
		case r.Shared != nil && r.GPUsPerMember != 0:
			errs = append(errs, field.Forbidden(ip.Child("gpusPerMember"), "set either gpusPerMember or shared, not both"))
		case r.GPUsPerMember < 0:
			errs = append(errs, field.Invalid(ip.Child("gpusPerMember"), r.GPUsPerMember,
				"must not be negative (0 makes a CPU-only role)"))
		case r.GPUsPerMember > MaxGPUsPerMember:
			errs = append(errs, field.Invalid(ip.Child("gpusPerMember"), r.GPUsPerMember, fmt.Sprintf(
				"must be at most %d: a member is one pod on one node; use more members for more GPUs", MaxGPUsPerMember)))
		}
		errs = append(errs, validateMIG(r.MIG, ip.Child("mig"))...)
		errs = append(errs, validateShared(r.Shared, r.MIG != nil, ip.Child("shared"))...)
		if r.MIG == nil && r.Shared == nil && r.GPUsPerMember <= 0 {
			continue
		}
		if gpuRole < 0 {
			gpuRole = i
			continue
		}
		if first, _ := s.Roles[gpuRole].Resource(); r.MIG != nil || r.Shared != nil || s.Roles[gpuRole].MIG != nil || s.Roles[gpuRole].Shared != nil {
			if res, _ := r.Resource(); res != first {
				errs = append(errs, field.Invalid(ip, r.Name, fmt.Sprintf(
					"every GPU role of a job asks for the same resource; role %s asks for %s, this one for %s",
					s.Roles[gpuRole].Name, first, res)))
			}
		}
	}
	if total > MaxGangMembers {
		errs = append(errs, field.Invalid(rp, total, fmt.Sprintf("the roles' members add up to more than %d", MaxGangMembers)))
	}
	if gpuRole < 0 && len(s.Roles) > 0 {
		errs = append(errs, field.Required(rp,
			"at least one role must ask for GPUs (gpusPerMember or mig): a gang is placed by its GPU members"))
	}
	return errs
}

// gpuMembers is the number of members that ask for GPUs (every member of
// a job without roles): the most clusters a gang can span.
func gpuMembers(s *JobSpec) int32 {
	var n int32
	for _, r := range s.MemberRoles() {
		if r.PerMember > 0 || len(s.Roles) == 0 {
			n += r.Members
		}
	}
	return n
}
