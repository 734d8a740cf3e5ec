// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestSetJobDefaults(t *testing.T) {
	tests := []struct {
		name  string
		job   *Job
		check func(t *testing.T, j *Job)
	}{
		{"empty fields get defaults", newJob("a").obj(), func(t *testing.T, j *Job) {
			s := j.Spec
			if s.PriorityClass != PriorityBatch || s.Placement.MaxClusters != 1 || s.Placement.Policy != BinPack {
				t.Errorf("priority/placement defaults: %+v %+v", s.PriorityClass, s.Placement)
			}
			if *s.FailurePolicy.MaxRestarts != 3 || s.FailurePolicy.OnClusterLoss != Reschedule {
				t.Errorf("failure policy defaults: %+v", s.FailurePolicy)
			}
			if s.RunPolicy != AtMostOnce {
				t.Errorf("run policy default %q, want %q", s.RunPolicy, AtMostOnce)
			}
			if !*s.Preemption.Preemptible || *s.Preemption.GracePeriodSeconds != 30 {
				t.Errorf("preemption defaults: %+v", s.Preemption)
			}
			if s.Rendezvous.Port != DefaultMasterPort || s.Rendezvous.ProcessesPerMember != s.Gang.GPUsPerMember {
				t.Errorf("rendezvous defaults %+v, want port %d and %d processes (one per GPU)",
					s.Rendezvous, DefaultMasterPort, s.Gang.GPUsPerMember)
			}
			if j.APIVersion != APIVersion || j.Kind != KindJob {
				t.Errorf("type meta %v", j.TypeMeta)
			}
		}},
		{"GPU limit put on the first container", newJob("a").gpus(4).obj(), func(t *testing.T, j *Job) {
			q := j.Spec.Template.Spec.Containers[0].Resources.Limits[ResourceGPU]
			if q.Value() != 4 {
				t.Errorf("gpu limit = %v, want 4", q.String())
			}
		}},
		{"explicit GPU limit kept", newJob("a").gpus(8).gpuLimit(8).obj(), func(t *testing.T, j *Job) {
			if got := TemplateResource(&j.Spec.Template, ResourceGPU); got != 8 {
				t.Errorf("gpu = %d, want 8", got)
			}
		}},
		{"production is not preemptible", newJob("a").with(func(j *Job) { j.Spec.PriorityClass = PriorityProduction }).obj(),
			func(t *testing.T, j *Job) {
				if *j.Spec.Preemption.Preemptible {
					t.Error("production job defaulted to preemptible")
				}
			}},
		{"explicit values kept", newJob("a").with(func(j *Job) {
			j.Spec.Placement.MaxClusters = 2
			j.Spec.Placement.Policy = Spread
			j.Spec.FailurePolicy.MaxRestarts = ptr[int32](0)
			j.Spec.Preemption.Preemptible = ptr(false)
		}).obj(), func(t *testing.T, j *Job) {
			s := j.Spec
			if s.Placement.MaxClusters != 2 || s.Placement.Policy != Spread || *s.FailurePolicy.MaxRestarts != 0 || *s.Preemption.Preemptible {
				t.Errorf("explicit values overwritten: %+v", s)
			}
		}},
		{"explicit rendezvous kept", newJob("a").gpus(8).with(func(j *Job) {
			j.Spec.Rendezvous = Rendezvous{Port: 1234, ProcessesPerMember: 2}
		}).obj(), func(t *testing.T, j *Job) {
			if r := j.Spec.Rendezvous; r.Port != 1234 || r.ProcessesPerMember != 2 {
				t.Errorf("explicit rendezvous overwritten: %+v", r)
			}
		}},
		{"processes follow MIG slices per member", newJob("a").gpus(0).with(func(j *Job) {
			j.Spec.Gang.MIG = &MIGRequest{Profile: "1g.10gb", PerMember: 3}
		}).obj(), func(t *testing.T, j *Job) {
			if j.Spec.Rendezvous.ProcessesPerMember != 3 {
				t.Errorf("processes per member = %d, want 3", j.Spec.Rendezvous.ProcessesPerMember)
			}
		}},
		{"MIG slices default to one, on the MIG resource", newJob("a").gpus(0).with(func(j *Job) {
			j.Spec.Gang.MIG = &MIGRequest{Profile: "1g.10gb"}
		}).obj(), func(t *testing.T, j *Job) {
			if j.Spec.Gang.MIG.PerMember != 1 {
				t.Errorf("perMember = %d", j.Spec.Gang.MIG.PerMember)
			}
			if j.Spec.Rendezvous.ProcessesPerMember != 1 {
				t.Errorf("processes per member = %d, want one per MIG slice", j.Spec.Rendezvous.ProcessesPerMember)
			}
			q := j.Spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/mig-1g.10gb"]
			if q.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) != 0 {
				t.Errorf("mig limit = %v", q.String())
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			SetJobDefaults(tc.job)
			tc.check(t, tc.job)
			if errs := ValidateJob(tc.job); len(errs) > 0 {
				t.Errorf("defaulted job is invalid: %v", errs)
			}
		})
	}
}

func TestSetQueueDefaults(t *testing.T) {
	q := &Queue{}
	q.Name = "a"
	SetQueueDefaults(q)
	if q.Spec.Weight == nil || *q.Spec.Weight != 1 || q.Kind != KindQueue || q.APIVersion != APIVersion {
		t.Errorf("queue defaults: %+v", q)
	}
	w := int32(5)
	q.Spec.Weight = &w
	SetQueueDefaults(q)
	if *q.Spec.Weight != 5 {
		t.Errorf("weight overwritten: %d", *q.Spec.Weight)
	}
}

func TestPriorityClasses(t *testing.T) {
	got := PriorityClasses()
	want := []PriorityClass{PrioritySystemCritical, PriorityProduction, PriorityTraining, PriorityBatch, PrioritySpot, PriorityDevelopment}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	if v, _ := PrioritySystemCritical.Value(); v != 1000000 {
		t.Errorf("system-critical = %d", v)
	}
	if v, _ := PriorityDevelopment.Value(); v != 100 {
		t.Errorf("development = %d", v)
	}
}
