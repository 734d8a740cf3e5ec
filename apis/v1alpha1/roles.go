// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import corev1 "k8s.io/api/core/v1"

// MemberRole is one role of a job in the form placement and dispatch use
// for both spellings of a job: a job with spec.gang and spec.template is
// one role with no name, a job with spec.roles has one per role.
type MemberRole struct {
	// Name is the role's name; empty for the one role of a job without roles.
	Name string
	// Members is the role's member count.
	Members int32
	// First is the global index of the role's first member: roles take
	// consecutive indices in spec order.
	First int32
	// Resource and PerMember are the accelerator each member asks for
	// (PerMember 0: a CPU-only role).
	Resource  corev1.ResourceName
	PerMember int32
	// Template is the role's pod template (shared with the spec, not a copy).
	Template *corev1.PodTemplateSpec
}

// Resource returns the extended resource and count each member of the role
// needs: nvidia.com/gpu × GPUsPerMember, the MIG profile's resource ×
// PerMember, or nvidia.com/gpu.shared × the shares PerMember; the count is 0
// for a CPU-only role.
func (r Role) Resource() (corev1.ResourceName, int32) {
	if r.MIG != nil {
		return r.MIG.ResourceName(), r.MIG.PerMember
	}
	if r.Shared != nil {
		return ResourceGPUShared, r.Shared.PerMember
	}
	return ResourceGPU, r.GPUsPerMember
}

// MemberRoles returns the job's roles in spec order with their first global
// member index.
func (s *JobSpec) MemberRoles() []MemberRole {
	if len(s.Roles) == 0 {
		res, n := s.Gang.Resource()
		return []MemberRole{{Members: s.Gang.Members, Resource: res, PerMember: n, Template: &s.Template}}
	}
	out := make([]MemberRole, len(s.Roles))
	var first int32
	for i := range s.Roles {
		r := &s.Roles[i]
		res, n := r.Resource()
		out[i] = MemberRole{Name: r.Name, Members: r.Members, First: first, Resource: res, PerMember: n, Template: &r.Template}
		first += r.Members
	}
	return out
}

// MemberCount is the number of members of the job, over all its roles.
func (s *JobSpec) MemberCount() int32 {
	if len(s.Roles) == 0 {
		return s.Gang.Members
	}
	var n int32
	for _, r := range s.Roles {
		n += r.Members
	}
	return n
}

// RoleOf returns the role of the member with a global index, and the
// member's index within it; ok is false for an index outside the job.
func (s *JobSpec) RoleOf(index int32) (r MemberRole, roleIndex int32, ok bool) {
	for _, r := range s.MemberRoles() {
		if index >= r.First && index < r.First+r.Members {
			return r, index - r.First, true
		}
	}
	return MemberRole{}, 0, false
}

// Environment variables the hub sets in every container of a member of a
// job with spec.roles, besides SHOAL_MEMBER_INDEX (the global index).
const (
	// EnvRole is the member's role name.
	EnvRole = "SHOAL_ROLE"
	// EnvRoleIndex is the member's index within its role, from 0.
	EnvRoleIndex = "SHOAL_ROLE_INDEX"
)
