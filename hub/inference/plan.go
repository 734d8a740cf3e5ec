// SPDX-License-Identifier: Apache-2.0

package inference

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Replica is one replica job as Plan sees it.
type Replica struct {
	Name, Model, Revision string
	// Pin is the cluster it was pinned to for spread ("" none); Cluster
	// where it was placed ("" not yet).
	Pin, Cluster string
	Phase        v1alpha1.JobPhase
	// Ready: running with every member ready; Address is member 0's.
	Ready   bool
	Address string
	// Created and Finished (zero while it runs) times; Message is the
	// job's failure message.
	Created, Finished time.Time
	Message           string
}

func (r *Replica) active() bool { return !r.Phase.Terminal() }

// Target is the replica revision the spec asks for and its model.
type Target struct{ Revision, Model string }

// NewReplica is a replica Plan asks to create.
type NewReplica struct {
	Revision, Model string
	// Pin is the cluster to pin it to ("" none).
	Pin string
}

// Decision is what Plan decided for one service.
type Decision struct {
	Create []NewReplica
	// Cancel are replica jobs to cancel; Delete finished ones to remove.
	Cancel, Delete []string
	Status         v1alpha1.InferenceServiceStatus
}

// Timing of the controller's decisions.
const (
	// PinWait is how long a replica pinned to a cluster for spread may
	// wait unplaced before it is replaced by one the scheduler may place
	// anywhere the service allows.
	PinWait = 30 * time.Second
	// KeepFinished is how long finished replica jobs are kept (for `shoal
	// job describe`) before the controller deletes them.
	KeepFinished = 10 * time.Minute
)

// Plan decides a service's replicas from its spec and status, its replica
// jobs, the eligible clusters (for spread) and the time. It is pure: the
// same input gives the same decision.
func Plan(svc *v1alpha1.InferenceService, target Target, reps []Replica, clusters []string, now time.Time) Decision {
	sp := &svc.Spec
	st := *svc.Status.DeepCopy()
	st.ObservedGeneration = svc.Generation
	if st.Revision == "" { // first pass: nothing to roll from
		st.Revision, st.Model = target.Revision, target.Model
	}
	var d Decision
	desired := desiredReplicas(svc, &st, now)
	if desired != st.DesiredReplicas {
		st.DesiredReplicas = desired
		t := metav1.NewTime(now)
		st.LastScaleTime = &t
	}
	var active []Replica
	for _, r := range reps {
		switch {
		case r.active():
			active = append(active, r)
		case !r.Finished.IsZero() && now.Sub(r.Finished) >= KeepFinished:
			d.Delete = append(d.Delete, r.Name)
		}
	}
	// A pinned replica the scheduler could not place in time gives way to
	// one it may place anywhere the service allows.
	kept := active[:0:0]
	var unpinned int
	for _, r := range active {
		if r.Pin != "" && r.Cluster == "" && now.Sub(r.Created) >= PinWait {
			d.Cancel = append(d.Cancel, r.Name)
			unpinned++
			continue
		}
		kept = append(kept, r)
	}
	active = kept

	rolling := target.Revision != st.Revision
	ro := st.Rollout
	if rolling && (ro == nil || ro.Revision != target.Revision || ro.Generation != svc.Generation) {
		t := metav1.NewTime(now)
		ro = &v1alpha1.ServiceRolloutStatus{From: st.Model, To: target.Model, Revision: target.Revision,
			Phase: v1alpha1.ServiceRolloutProgressing, StartTime: &t, ProgressTime: &t, Generation: svc.Generation,
			Message: fmt.Sprintf("rolling out %s over %s", target.Model, st.Model)}
	}
	if !rolling && ro != nil && ro.Phase == v1alpha1.ServiceRolloutProgressing {
		// The spec went back to the stable revision mid-rollout.
		ro.Phase, ro.Message = v1alpha1.ServiceRolloutRolledBack, "rolled back: the spec returned to "+st.Model
	}
	if rolling && ro.Phase == v1alpha1.ServiceRolloutProgressing {
		rollout(&d, sp, &st, ro, target, reps, active, desired, clusters, now)
	} else {
		steady(&d, sp, &st, active, desired, clusters)
	}
	for i := range min(unpinned, len(d.Create)) {
		d.Create[i].Pin = "" // its pinned cluster had no room in time
	}
	st.Rollout = ro
	status(&st, svc, reps, d.Cancel, desired, rolling, now)
	d.Status = st
	return d
}

// desiredReplicas is the replica count the load asks for within bounds,
// lowered only once the lower count held for the scale-down delay (st's
// LowSince moves with it).
func desiredReplicas(svc *v1alpha1.InferenceService, st *v1alpha1.InferenceServiceStatus, now time.Time) int32 {
	sp := &svc.Spec
	a := sp.Autoscaling
	cur := st.DesiredReplicas
	if svc.Status.ObservedGeneration == 0 && cur == 0 {
		cur = sp.Replicas.Min
	}
	if a == nil {
		st.LowSince = nil
		return sp.Replicas.Min
	}
	var load int64
	if l := st.Load; l != nil {
		for _, src := range l.Sources {
			if now.Sub(src.Time.Time) < LoadFreshFor {
				load += src.Value
			}
		}
	}
	want := int32(min(int64(sp.Replicas.Max), (load+a.TargetPerReplica-1)/a.TargetPerReplica))
	want = max(want, sp.Replicas.Min)
	cur = min(max(cur, sp.Replicas.Min), sp.Replicas.Max)
	if want >= cur {
		st.LowSince = nil
		return want
	}
	if st.LowSince == nil {
		t := metav1.NewTime(now)
		st.LowSince = &t
		return cur
	}
	if now.Sub(st.LowSince.Time) < time.Duration(a.ScaleDownDelaySeconds)*time.Second {
		return cur
	}
	st.LowSince = nil
	return want
}

// steady keeps desired replicas of the stable revision: others go, missing
// ones are created, extra ones cancelled (not ready ones and the newest
// first).
func steady(d *Decision, sp *v1alpha1.InferenceServiceSpec, st *v1alpha1.InferenceServiceStatus, active []Replica, desired int32, clusters []string) {
	var mine []Replica
	for _, r := range active {
		if r.Revision != st.Revision {
			d.Cancel = append(d.Cancel, r.Name)
			continue
		}
		mine = append(mine, r)
	}
	n := int32(len(mine))
	if n < desired {
		pins := spreadPins(sp, mine, clusters, int(desired-n))
		for _, pin := range pins {
			d.Create = append(d.Create, NewReplica{Revision: st.Revision, Model: st.Model, Pin: pin})
		}
		return
	}
	for _, r := range removalOrder(mine)[:n-desired] {
		d.Cancel = append(d.Cancel, r.Name)
	}
}

// rollout moves a progressing rollout one step: new replicas up to desired
// within maxSurge above it, old ones removed only while the ready count
// stays at desired; it completes when only new replicas run and desired
// are ready, and rolls back when a new replica failed or none became ready
// within the progress deadline.
func rollout(d *Decision, sp *v1alpha1.InferenceServiceSpec, st *v1alpha1.InferenceServiceStatus, ro *v1alpha1.ServiceRolloutStatus,
	target Target, all, active []Replica, desired int32, clusters []string, now time.Time) {
	for _, r := range all {
		if r.Revision == target.Revision && r.Phase == v1alpha1.JobFailed && !r.Finished.Before(ro.StartTime.Time) {
			rollback(d, ro, active, target, fmt.Sprintf("replica %s of %s failed: %s", r.Name, target.Model, r.Message), now)
			return
		}
	}
	var news, olds []Replica
	var newReady, oldReady int32
	for _, r := range active {
		if r.Revision == target.Revision {
			news = append(news, r)
			if r.Ready {
				newReady++
			}
			continue
		}
		olds = append(olds, r)
		if r.Ready {
			oldReady++
		}
	}
	if newReady > readyOf(st, target.Revision) {
		t := metav1.NewTime(now)
		ro.ProgressTime = &t
	}
	if newReady < desired && now.Sub(ro.ProgressTime.Time) >= time.Duration(sp.Rollout.ProgressDeadlineSeconds)*time.Second {
		rollback(d, ro, active, target, fmt.Sprintf("no new replica of %s became ready in %ds (%d of %d ready)",
			target.Model, sp.Rollout.ProgressDeadlineSeconds, newReady, desired), now)
		return
	}
	if len(olds) == 0 && newReady >= desired && int32(len(news)) >= desired {
		st.Revision, st.Model = target.Revision, target.Model
		ro.Phase, ro.Message = v1alpha1.ServiceRolloutComplete, fmt.Sprintf("%s serves on %d replicas", target.Model, newReady)
		for _, r := range removalOrder(news)[:int32(len(news))-desired] {
			d.Cancel = append(d.Cancel, r.Name)
		}
		return
	}
	// New replicas: up to desired, the total within desired + maxSurge.
	room := desired + sp.Rollout.MaxSurge - int32(len(active))
	if k := min(desired-int32(len(news)), room); k > 0 {
		for _, pin := range spreadPins(sp, active, clusters, int(k)) {
			d.Create = append(d.Create, NewReplica{Revision: target.Revision, Model: target.Model, Pin: pin})
		}
	}
	// Old replicas go while the ready count stays at desired.
	excess := int32(len(news)+len(olds)) - desired
	for _, r := range removalOrder(olds) {
		if excess <= 0 {
			break
		}
		if r.Ready {
			if newReady+oldReady-1 < desired {
				break
			}
			oldReady--
		}
		d.Cancel = append(d.Cancel, r.Name)
		excess--
	}
}

// rollback ends a rollout: its new replicas are cancelled, the stable
// revision keeps serving.
func rollback(d *Decision, ro *v1alpha1.ServiceRolloutStatus, active []Replica, target Target, why string, now time.Time) {
	ro.Phase, ro.Message = v1alpha1.ServiceRolloutRolledBack, "rolled back: "+why
	t := metav1.NewTime(now)
	ro.ProgressTime = &t
	for _, r := range active {
		if r.Revision == target.Revision {
			d.Cancel = append(d.Cancel, r.Name)
		}
	}
}

// readyOf is how many replicas of revision the last status listed ready.
func readyOf(st *v1alpha1.InferenceServiceStatus, revision string) int32 {
	var n int32
	for _, e := range st.Endpoints {
		if e.Revision == revision && e.Ready {
			n++
		}
	}
	return n
}

// removalOrder sorts replicas in the order to remove them: unplaced, then
// not ready, then the newest.
func removalOrder(rs []Replica) []Replica {
	out := append([]Replica(nil), rs...)
	rank := func(r Replica) int {
		switch {
		case r.Cluster == "":
			return 0
		case !r.Ready:
			return 1
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := rank(out[i]), rank(out[j]); a != b {
			return a < b
		}
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].Name > out[j].Name
	})
	return out
}

// spreadPins returns k pins for new replicas: with SpreadClusters and
// eligible clusters, each the cluster with the fewest replicas (placed, or
// pinned while unplaced), ties by name; "" (no pin) otherwise.
func spreadPins(sp *v1alpha1.InferenceServiceSpec, existing []Replica, clusters []string, k int) []string {
	out := make([]string, k)
	if sp.Placement.Spread != v1alpha1.SpreadClusters || len(clusters) < 2 {
		return out
	}
	count := map[string]int{}
	for _, c := range clusters {
		count[c] = 0
	}
	for _, r := range existing {
		c := r.Cluster
		if c == "" {
			c = r.Pin
		}
		if _, ok := count[c]; ok {
			count[c]++
		}
	}
	sorted := append([]string(nil), clusters...)
	sort.Strings(sorted)
	for i := range out {
		best := sorted[0]
		for _, c := range sorted[1:] {
			if count[c] < count[best] {
				best = c
			}
		}
		out[i] = best
		count[best]++
	}
	return out
}

// status fills the counts, endpoints and conditions.
func status(st *v1alpha1.InferenceServiceStatus, svc *v1alpha1.InferenceService, reps []Replica, cancelled []string, desired int32, rolling bool, now time.Time) {
	gone := map[string]bool{}
	for _, n := range cancelled {
		gone[n] = true
	}
	st.Replicas, st.ReadyReplicas, st.Endpoints = 0, 0, nil
	for _, r := range reps {
		if !r.active() || gone[r.Name] {
			continue
		}
		st.Replicas++
		if r.Ready {
			st.ReadyReplicas++
		}
		st.Endpoints = append(st.Endpoints, v1alpha1.ServiceEndpoint{Replica: r.Name, Revision: r.Revision, Model: r.Model,
			Cluster: r.Cluster, Address: r.Address, Port: svc.Spec.Port, Ready: r.Ready && r.Address != ""})
	}
	sort.Slice(st.Endpoints, func(i, j int) bool { return st.Endpoints[i].Replica < st.Endpoints[j].Replica })
	t := metav1.NewTime(now)
	ready := metav1.Condition{Type: v1alpha1.ServiceConditionReady, Status: metav1.ConditionTrue, Reason: "MinimumReplicasReady",
		Message: fmt.Sprintf("%d of %d replicas ready (min %d)", st.ReadyReplicas, desired, svc.Spec.Replicas.Min), LastTransitionTime: t}
	if st.ReadyReplicas < svc.Spec.Replicas.Min || (desired > 0 && st.ReadyReplicas == 0) {
		ready.Status, ready.Reason = metav1.ConditionFalse, "MinimumReplicasUnavailable"
	}
	setCondition(st, ready)
	prog := metav1.Condition{Type: v1alpha1.ServiceConditionProgressing, Status: metav1.ConditionFalse, Reason: "NoRollout", LastTransitionTime: t}
	if ro := st.Rollout; ro != nil {
		prog.Reason, prog.Message = string(ro.Phase), ro.Message
		if ro.Phase == v1alpha1.ServiceRolloutProgressing {
			prog.Status = metav1.ConditionTrue
		}
	}
	setCondition(st, prog)
	if ro := st.Rollout; rolling && ro != nil && ro.Phase == v1alpha1.ServiceRolloutRolledBack {
		setCondition(st, metav1.Condition{Type: v1alpha1.ServiceConditionRolledBack, Status: metav1.ConditionTrue,
			Reason: "NewReplicasNotReady", Message: ro.Message, LastTransitionTime: t})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ServiceConditionRolledBack)
	}
}

// setCondition sets c, keeping its transition time while its status stands.
func setCondition(st *v1alpha1.InferenceServiceStatus, c metav1.Condition) {
	meta.SetStatusCondition(&st.Conditions, c)
}
