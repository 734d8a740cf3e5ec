// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/scheduler"
)

// fullTemplate gives a job's pod template what the scheduler's cache does
// not keep (containers, environment, volumes), so that a write of the
// scheduler that lost them shows.
func fullTemplate(j *v1alpha1.Job) {
	spec := &j.Spec.Template.Spec
	spec.Containers[0].Env = append(spec.Containers[0].Env, corev1.EnvVar{Name: "NCCL_DEBUG", Value: "INFO"})
	spec.Containers[0].Args = []string{"--epochs", "3"}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "scratch",
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

// TestWritesKeepTheWholeJob: the scheduler caches jobs without their pod
// templates, and every write it makes of a job — a booking, an
// explanation, a preemption — stores the job with its template as
// submitted.
func TestWritesKeepTheWholeJob(t *testing.T) {
	e := newEnv(t)
	e.Cluster("eu1", node("a", "r", 0))
	spot := func(j *v1alpha1.Job) { j.Spec.PriorityClass = v1alpha1.PrioritySpot }
	prod := func(j *v1alpha1.Job) { j.Spec.PriorityClass = v1alpha1.PriorityProduction }
	e.Submit("spot", 1, 8, fullTemplate, spot)
	e.Submit("waits", 2, 8, fullTemplate, spot)
	submitted := map[string]corev1.PodTemplateSpec{"spot": e.Job("spot").Spec.Template, "waits": e.Job("waits").Spec.Template}
	s := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock},
		scheduler.WithPlacementOptions(placement.WithPreemptAfter(0)))
	stop, err := s.StartCaches(e.Ctx, func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	res, err := s.Cycle(e.Ctx, nil)
	if err != nil || len(res.Placed) != 1 || res.Placed[0] != "spot" {
		t.Fatalf("placed %v (%v), want [spot]", res.Placed, err)
	}
	if p := e.Job("spot").Status.Phase; p != v1alpha1.JobPlaced {
		t.Fatalf("spot %s, want Placed", p)
	}
	if e.Job("waits").Status.Placement == nil {
		t.Fatal("the waiting job was not explained")
	}
	e.Submit("prod", 1, 8, prod)
	// The cycle decides on the watch-fed caches: it must see prod.
	_, rev, err := e.Jobs.Get(e.Ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	waitCacheJobs(t, s, rev)
	if res, err = s.Cycle(e.Ctx, nil); err != nil || len(res.Preempted) != 1 {
		t.Fatalf("preempted %v (%v), want [spot]", res.Preempted, err)
	}
	if e.Job("spot").Annotations[v1alpha1.AnnotationPreemptedBy] != "prod" {
		t.Fatal("spot not marked preempted")
	}
	for name, want := range submitted {
		if got := e.Job(name).Spec.Template; !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: the scheduler's writes changed the pod template:\n got %+v\nwant %+v", name, got.Spec, want.Spec)
		}
	}
}
