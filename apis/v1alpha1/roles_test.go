// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// role is a test role with one busybox container.
func role(name string, members, gpus int32) Role {
	return Role{Name: name, Members: members, GPUsPerMember: gpus, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: name, Image: "busybox"}}}}}
}

// withRoles replaces the gang form by roles.
func withRoles(rs ...Role) func(*Job) {
	return func(j *Job) {
		j.Spec.Gang, j.Spec.Template, j.Spec.Roles = Gang{}, corev1.PodTemplateSpec{}, rs
	}
}

func TestValidateRoles(t *testing.T) {
	mig := func(r Role, profile string) Role { r.GPUsPerMember, r.MIG = 0, &MIGRequest{Profile: profile}; return r }
	gpuLimit := func(r Role, res corev1.ResourceName, n int64) Role {
		r.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{res: *resource.NewQuantity(n, resource.DecimalSI)}
		return r
	}
	tests := []struct {
		name string
		job  *Job
		want []string
	}{
		{"launcher and workers", newJob("a").with(withRoles(role("launcher", 1, 0), role("worker", 4, 8))).obj(), nil},
		{"two GPU roles of different sizes", newJob("a").with(withRoles(role("master", 1, 8), role("worker", 3, 4))).obj(), nil},
		{"both forms", newJob("a").with(func(j *Job) { j.Spec.Roles = []Role{role("worker", 2, 8)} }).obj(),
			[]string{"spec.gang: Forbidden", "spec.template: Forbidden"}},
		{"neither form", newJob("a").with(withRoles()).obj(), []string{
			"spec.gang.members: Invalid value", "spec.gang.gpusPerMember: Invalid value",
			"spec.template.spec.containers: Required value"}},
		{"bad and duplicate names", newJob("a").with(withRoles(role("Worker_1", 1, 8), role("", 1, 8),
			role("w", 1, 8), role("w", 1, 8))).obj(), []string{
			"spec.roles[0].name: Invalid value", "spec.roles[1].name: Required value", "spec.roles[3].name: Duplicate value"}},
		{"bad counts", newJob("a").with(withRoles(role("a", 0, 8), role("b", 1, -1), role("c", 1, MaxGPUsPerMember+1))).obj(),
			[]string{"spec.roles[0].members: Invalid value", "spec.roles[1].gpusPerMember: Invalid value",
				"spec.roles[2].gpusPerMember: Invalid value"}},
		{"no GPU role", newJob("a").with(withRoles(role("a", 1, 0), role("b", 2, 0))).obj(),
			[]string{"spec.roles: Required value"}},
		{"GPUs and MIG mixed", newJob("a").with(withRoles(role("a", 1, 8), mig(role("b", 2, 0), "1g.10gb"))).obj(),
			[]string{"spec.roles[1]: Invalid value"}},
		{"two MIG profiles", newJob("a").with(withRoles(mig(role("a", 1, 0), "3g.40gb"), mig(role("b", 2, 0), "1g.10gb"))).obj(),
			[]string{"spec.roles[1]: Invalid value"}},
		{"MIG with GPUs and a bad profile", newJob("a").with(withRoles(func() Role {
			r := mig(role("a", 1, 0), "big")
			r.GPUsPerMember = 2
			return r
		}())).obj(), []string{"spec.roles[0].gpusPerMember: Forbidden", "spec.roles[0].mig.profile: Invalid value"}},
		{"CPU role asking for GPUs", newJob("a").with(withRoles(gpuLimit(role("launcher", 1, 0), ResourceGPU, 1),
			role("worker", 2, 8))).obj(), []string{"spec.roles[0].template.spec.containers: Forbidden"}},
		{"role template limit differs", newJob("a").with(withRoles(gpuLimit(role("worker", 2, 8), ResourceGPU, 4))).obj(),
			[]string{"spec.roles[0].template.spec.containers: Invalid value"}},
		{"role template without containers and with a node", newJob("a").with(withRoles(role("a", 1, 8), func() Role {
			r := role("b", 1, 8)
			r.Template.Spec.Containers = nil
			return r
		}(), func() Role {
			r := role("c", 1, 8)
			r.Template.Spec.NodeName = "n1"
			return r
		}())).obj(), []string{"spec.roles[1].template.spec.containers: Required value",
			"spec.roles[2].template.spec.nodeName: Forbidden"}},
		{"maxClusters counts GPU members only", newJob("a").with(withRoles(role("launcher", 1, 0), role("worker", 2, 8))).
			with(func(j *Job) { j.Spec.Placement.MaxClusters = 3 }).obj(),
			[]string{"spec.placement.maxClusters: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			SetJobDefaults(tt.job)
			if got := errStrings(ValidateJob(tt.job)); !slices.Equal(got, tt.want) {
				t.Errorf("errors = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMemberRoles(t *testing.T) {
	j := newJob("a").with(withRoles(role("launcher", 1, 0), role("worker", 3, 8))).obj()
	SetJobDefaults(j)
	rs := j.Spec.MemberRoles()
	if len(rs) != 2 || rs[0].Name != "launcher" || rs[0].First != 0 || rs[0].PerMember != 0 ||
		rs[1].Name != "worker" || rs[1].First != 1 || rs[1].Members != 3 || rs[1].PerMember != 8 || rs[1].Resource != ResourceGPU {
		t.Fatalf("MemberRoles = %+v", rs)
	}
	if rs[1].Template != &j.Spec.Roles[1].Template {
		t.Error("a role's template is not the spec's")
	}
	if n := j.Spec.MemberCount(); n != 4 {
		t.Errorf("MemberCount = %d, want 4", n)
	}
	for idx, want := range map[int32][2]any{0: {"launcher", int32(0)}, 1: {"worker", int32(0)}, 3: {"worker", int32(2)}} {
		r, ri, ok := j.Spec.RoleOf(idx)
		if !ok || r.Name != want[0] || ri != want[1] {
			t.Errorf("RoleOf(%d) = %s %d %v, want %v", idx, r.Name, ri, ok, want)
		}
	}
	if _, _, ok := j.Spec.RoleOf(4); ok {
		t.Error("RoleOf(4) found a role of a 4-member job")
	}
	// Defaults: the GPU role's limit on its first container, none on the launcher.
	if q := j.Spec.Roles[1].Template.Spec.Containers[0].Resources.Limits[ResourceGPU]; q.Value() != 8 {
		t.Errorf("worker GPU limit = %v, want 8", q.String())
	}
	if _, ok := j.Spec.Roles[0].Template.Spec.Containers[0].Resources.Limits[ResourceGPU]; ok {
		t.Error("the CPU-only launcher got a GPU limit")
	}
	// The single-template form is one unnamed role.
	one := newJob("b").obj()
	if rs := one.Spec.MemberRoles(); len(rs) != 1 || rs[0].Name != "" || rs[0].Members != 2 || rs[0].PerMember != 8 ||
		rs[0].Template != &one.Spec.Template {
		t.Errorf("MemberRoles of a gang job = %+v", rs)
	}
}
