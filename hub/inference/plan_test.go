// SPDX-License-Identifier: Apache-2.0

package inference

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func service(min, max int32, autoscale bool) *v1alpha1.InferenceService {
	s := &v1alpha1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "chat", Generation: 1},
		Spec: v1alpha1.InferenceServiceSpec{Queue: "team-a", Model: "llama@1", Replicas: v1alpha1.ServiceReplicas{Min: min, Max: max}}}
	if autoscale {
		s.Spec.Autoscaling = &v1alpha1.ServiceAutoscaling{TargetPerReplica: 10}
	}
	v1alpha1.SetInferenceServiceDefaults(s)
	return s
}

var v1 = Target{Revision: "r1", Model: "llama@1"}

// step runs Plan and applies its decision to reps and svc the way the
// controller would: new replicas appear unplaced, cancelled ones finish.
func step(t *testing.T, svc *v1alpha1.InferenceService, target Target, reps []Replica, now time.Time) (Decision, []Replica) {
	t.Helper()
	d := Plan(svc, target, reps, []string{"east", "west"}, now)
	svc.Status = d.Status
	gone := map[string]bool{}
	for _, n := range d.Cancel {
		gone[n] = true
	}
	var out []Replica
	for _, r := range reps {
		if gone[r.Name] {
			r.Phase, r.Finished = v1alpha1.JobCancelled, now
		}
		out = append(out, r)
	}
	for i, c := range d.Create {
		out = append(out, Replica{Name: fmt.Sprintf("%s-%d-%d", c.Revision, now.Unix(), i), Model: c.Model, Revision: c.Revision,
			Pin: c.Pin, Phase: v1alpha1.JobPending, Created: now})
	}
	return d, out
}

// run makes every active replica placed (in its pin or east) and ready
// whose revision ready says.
func run(reps []Replica, ready func(Replica) bool) []Replica {
	for i := range reps {
		r := &reps[i]
		if r.Phase.Terminal() {
			continue
		}
		r.Cluster = r.Pin
		if r.Cluster == "" {
			r.Cluster = "east"
		}
		r.Phase = v1alpha1.JobRunning
		r.Ready = ready(*r)
		r.Address = "10.0.0.1"
	}
	return reps
}

func counts(reps []Replica, rev string) (active, ready int) {
	for _, r := range reps {
		if !r.Phase.Terminal() && r.Revision == rev {
			active++
			if r.Ready {
				ready++
			}
		}
	}
	return
}

func TestPlanSpreadsMinimumReplicasOverClusters(t *testing.T) {
	svc := service(2, 2, false)
	d, _ := step(t, svc, v1, nil, t0)
	if len(d.Create) != 2 || d.Create[0].Pin == d.Create[1].Pin {
		t.Fatalf("create %+v, want two replicas pinned to different clusters", d.Create)
	}
	svc.Spec.Placement.Spread = v1alpha1.Pack
	svc.Status = v1alpha1.InferenceServiceStatus{}
	if d, _ := step(t, svc, v1, nil, t0); len(d.Create) != 2 || d.Create[0].Pin != "" {
		t.Fatalf("pack: create %+v, want two replicas unpinned", d.Create)
	}
}

func TestPlanScalesOnLoadAndDownAfterTheDelay(t *testing.T) {
	svc := service(1, 5, true)
	svc.Status.Load = &v1alpha1.ServiceLoad{Sources: []v1alpha1.ServiceLoadSource{{Source: "user:gw", Value: 35, Time: metav1.NewTime(t0)}}}
	d, reps := step(t, svc, v1, nil, t0)
	if svc.Status.DesiredReplicas != 4 || len(d.Create) != 4 {
		t.Fatalf("load 35 at 10 per replica: desired %d, created %d; want 4", svc.Status.DesiredReplicas, len(d.Create))
	}
	reps = run(reps, func(Replica) bool { return true })
	svc.Status.Load.Sources[0] = v1alpha1.ServiceLoadSource{Source: "user:gw", Value: 0, Time: metav1.NewTime(t0.Add(time.Second))}
	d, reps = step(t, svc, v1, reps, t0.Add(2*time.Second))
	if svc.Status.DesiredReplicas != 4 || len(d.Cancel) != 0 {
		t.Fatalf("load gone for 1 s: desired %d, cancelled %v; want 4 kept for the scale-down delay", svc.Status.DesiredReplicas, d.Cancel)
	}
	svc.Status.Load.Sources[0].Time = metav1.NewTime(t0.Add(61 * time.Second))
	d, _ = step(t, svc, v1, reps, t0.Add(62*time.Second))
	if svc.Status.DesiredReplicas != 1 || len(d.Cancel) != 3 {
		t.Fatalf("after the delay: desired %d, cancelled %v; want 1 and 3 cancelled", svc.Status.DesiredReplicas, d.Cancel)
	}
	if c := svc.Status.Conditions; len(c) == 0 || c[0].Type != v1alpha1.ServiceConditionReady {
		t.Fatalf("conditions %+v", c)
	}
}

func TestPlanScalesToZeroAndBack(t *testing.T) {
	svc := service(0, 3, true)
	if d, _ := step(t, svc, v1, nil, t0); len(d.Create) != 0 || svc.Status.DesiredReplicas != 0 {
		t.Fatalf("no load, min 0: created %d, desired %d; want none", len(d.Create), svc.Status.DesiredReplicas)
	}
	svc.Status.Load = &v1alpha1.ServiceLoad{Sources: []v1alpha1.ServiceLoadSource{{Source: "user:gw", Value: 1, Time: metav1.NewTime(t0)}}}
	if d, _ := step(t, svc, v1, nil, t0.Add(time.Second)); len(d.Create) != 1 {
		t.Fatalf("load 1 from zero: created %d, want 1", len(d.Create))
	}
	// A stale report counts for nothing.
	svc.Status.Load.Sources[0].Time = metav1.NewTime(t0.Add(-2 * LoadFreshFor))
	svc.Status.LowSince = nil
	step(t, svc, v1, nil, t0.Add(2*time.Second))
	if svc.Status.LowSince == nil {
		t.Fatalf("a stale load report must start the scale-down delay")
	}
}

func TestPlanRollsOutWithoutDroppingBelowDesired(t *testing.T) {
	svc := service(2, 2, false)
	_, reps := step(t, svc, v1, nil, t0)
	reps = run(reps, func(Replica) bool { return true })
	step(t, svc, v1, reps, t0.Add(time.Second))
	v2 := Target{Revision: "r2", Model: "llama@2"}
	now := t0.Add(10 * time.Second)
	for i := range 20 {
		var d Decision
		d, reps = step(t, svc, v2, reps, now)
		_, oldReady := counts(reps, "r1")
		_, newReady := counts(reps, "r2")
		if oldReady+newReady < 2 {
			t.Fatalf("pass %d: %d old + %d new replicas ready, below desired 2 (decision %+v)", i, oldReady, newReady, d)
		}
		if a1, _ := counts(reps, "r1"); a1 > 0 {
			if a2, _ := counts(reps, "r2"); a1+a2 > 3 {
				t.Fatalf("pass %d: %d replicas, above desired + maxSurge", i, a1+a2)
			}
		}
		if svc.Status.Rollout.Phase == v1alpha1.ServiceRolloutComplete {
			if svc.Status.Model != "llama@2" || svc.Status.Revision != "r2" {
				t.Fatalf("complete but serving %s (%s)", svc.Status.Model, svc.Status.Revision)
			}
			return
		}
		// New replicas take 3 s to become ready.
		reps = run(reps, func(r Replica) bool { return r.Revision == "r1" || now.Sub(r.Created) >= 3*time.Second })
		now = now.Add(time.Second)
	}
	t.Fatalf("rollout did not complete: %+v", svc.Status.Rollout)
}

func TestPlanRollsBackWhenNewReplicasDoNotBecomeReady(t *testing.T) {
	svc := service(1, 1, false)
	svc.Spec.Rollout.ProgressDeadlineSeconds = 30
	_, reps := step(t, svc, v1, nil, t0)
	reps = run(reps, func(Replica) bool { return true })
	v2 := Target{Revision: "r2", Model: "llama@2"}
	_, reps = step(t, svc, v2, reps, t0.Add(time.Second))
	reps = run(reps, func(r Replica) bool { return r.Revision == "r1" })
	d, reps := step(t, svc, v2, reps, t0.Add(20*time.Second))
	if svc.Status.Rollout.Phase != v1alpha1.ServiceRolloutProgressing || len(d.Cancel) != 0 {
		t.Fatalf("before the deadline: %+v, cancelled %v", svc.Status.Rollout, d.Cancel)
	}
	d, reps = step(t, svc, v2, reps, t0.Add(32*time.Second))
	if svc.Status.Rollout.Phase != v1alpha1.ServiceRolloutRolledBack || svc.Status.Model != "llama@1" {
		t.Fatalf("after the deadline: rollout %+v, model %s; want rolled back to llama@1", svc.Status.Rollout, svc.Status.Model)
	}
	if a, r := counts(reps, "r1"); a != 1 || r != 1 {
		t.Fatalf("old replicas active %d ready %d, want the one kept", a, r)
	}
	if a, _ := counts(reps, "r2"); a != 0 {
		t.Fatalf("%d new replicas left after the rollback", a)
	}
	if !hasCondition(svc, v1alpha1.ServiceConditionRolledBack) {
		t.Fatalf("no RolledBack condition: %+v", svc.Status.Conditions)
	}
	// It stays rolled back: no new replica of the refused revision.
	if d, _ = step(t, svc, v2, reps, t0.Add(40*time.Second)); len(d.Create) != 0 {
		t.Fatalf("after the rollback it created %+v", d.Create)
	}
}

func TestPlanRollsBackOnAFailedNewReplica(t *testing.T) {
	svc := service(1, 1, false)
	_, reps := step(t, svc, v1, nil, t0)
	reps = run(reps, func(Replica) bool { return true })
	v2 := Target{Revision: "r2", Model: "llama@2"}
	_, reps = step(t, svc, v2, reps, t0.Add(time.Second))
	for i := range reps {
		if reps[i].Revision == "r2" {
			reps[i].Phase, reps[i].Finished, reps[i].Message = v1alpha1.JobFailed, t0.Add(2*time.Second), "member 0 exited 1"
		}
	}
	step(t, svc, v2, reps, t0.Add(3*time.Second))
	if ro := svc.Status.Rollout; ro.Phase != v1alpha1.ServiceRolloutRolledBack {
		t.Fatalf("rollout %+v, want rolled back", ro)
	}
}

func TestPlanReplacesAPinnedReplicaThatWaitsTooLong(t *testing.T) {
	svc := service(2, 2, false)
	_, reps := step(t, svc, v1, nil, t0)
	reps[0].Cluster, reps[0].Phase = reps[0].Pin, v1alpha1.JobRunning
	d, _ := step(t, svc, v1, reps, t0.Add(PinWait))
	if len(d.Cancel) != 1 || d.Cancel[0] != reps[1].Name || len(d.Create) != 1 || d.Create[0].Pin != "" {
		t.Fatalf("cancel %v create %+v: want the unplaced pinned replica replaced", d.Cancel, d.Create)
	}
}

func hasCondition(s *v1alpha1.InferenceService, typ string) bool {
	for _, c := range s.Status.Conditions {
		if c.Type == typ && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}
