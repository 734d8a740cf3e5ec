// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// TestGangOfRoles: a job with roles maps to a gang with roles (members
// summed, each role's tolerations, MIG resource), its estimate the longest
// role deadline only when every role has one, and survives the ledger.
func TestGangOfRoles(t *testing.T) {
	tol := []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	d := func(s int64) *int64 { return &s }
	j := testjob.New("mpi").Queue("q").Role("launcher", 1, 0, "l").Role("worker", 3, 8, "w").With(func(j *v1alpha1.Job) {
		j.Spec.Roles[1].Template.Spec.Tolerations = tol
		j.Spec.Roles[0].Template.Spec.ActiveDeadlineSeconds = d(60)
		j.Spec.Roles[1].Template.Spec.ActiveDeadlineSeconds = d(3600)
	}).Obj()
	v1alpha1.SetJobDefaults(j)
	g := scheduler.GangOf(j)
	want := []placement.Role{{Name: "launcher", Members: 1}, {Name: "worker", Members: 3, GPUsPerMember: 8, Tolerations: tol}}
	if g.Members != 4 || g.GPUsPerMember != 0 || g.MIGResource != "" || !reflect.DeepEqual(g.Roles, want) ||
		g.Estimate != time.Hour || g.GPUs() != 24 {
		t.Fatalf("gang %+v", g)
	}
	if back := ledger.GangOf(g).Placement(); !reflect.DeepEqual(back.Roles, g.Roles) || back.Members != 4 {
		t.Errorf("through the ledger: %+v", back)
	}
	j.Spec.Roles[0].Template.Spec.ActiveDeadlineSeconds = nil
	if g := scheduler.GangOf(j); g.Estimate != 0 {
		t.Errorf("estimate %v with a role without a deadline, want 0 (unknown)", g.Estimate)
	}
	j.Spec.Roles[1].GPUsPerMember, j.Spec.Roles[1].MIG = 0, &v1alpha1.MIGRequest{Profile: "1g.10gb", PerMember: 2}
	if g := scheduler.GangOf(j); g.MIGResource != "nvidia.com/mig-1g.10gb" || g.Roles[1].GPUsPerMember != 2 || g.Roles[0].GPUsPerMember != 0 {
		t.Errorf("MIG roles: %+v", g)
	}
}

// TestGangOfShared: spec.gang.shared (and a role's) maps to the engine's
// shared request, shares per member as GPUsPerMember, and the members'
// resource is nvidia.com/gpu.shared.
func TestGangOfShared(t *testing.T) {
	j := testjob.New("infer").Queue("q").With(func(j *v1alpha1.Job) {
		j.Spec.Gang = v1alpha1.Gang{Members: 2, Shared: &v1alpha1.SharedGPURequest{Strategy: v1alpha1.SharingMPS}}
	}).Obj()
	v1alpha1.SetJobDefaults(j)
	g := scheduler.GangOf(j)
	if g.Shared == nil || g.Shared.Strategy != "mps" || g.GPUsPerMember != 1 || g.MIGResource != "" ||
		g.Resource() != "nvidia.com/gpu.shared" {
		t.Fatalf("gang %+v (shared %+v)", g, g.Shared)
	}
	if back := ledger.GangOf(g).Placement(); !reflect.DeepEqual(back.Shared, g.Shared) {
		t.Errorf("through the ledger: %+v", back.Shared)
	}
	r := testjob.New("roles").Queue("q").Role("server", 2, 0, "s").Obj()
	r.Spec.Roles[0].Shared = &v1alpha1.SharedGPURequest{PerMember: 3}
	if g := scheduler.GangOf(r); g.Shared == nil || g.Roles[0].GPUsPerMember != 3 {
		t.Errorf("shared role: %+v", g)
	}
}
