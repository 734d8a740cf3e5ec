// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/registry"
)

// fleetView is what the fleet and queue gauges show: the end of the last
// cycle this replica ran as leader.
type fleetView struct {
	gpus map[gpuKey]int
	// clusters maps a cluster to its state, heartbeat age and inventory
	// age (negative: never).
	clusters map[string]clusterView
	queues   map[string]*queueView
	phases   map[v1alpha1.JobPhase]int
}

type clusterView struct {
	state                 v1alpha1.ClusterState
	heartbeatAge, invAge  float64
	hasHeartbeat, hasInvt bool
}

type queueView struct {
	nominal, borrowingLimit, usage, borrowed map[string]int
	pendingJobs, pendingGPUs, activeJobs     int
	fairShare                                float64
}

// viewOf builds the view from the cycle's fleet, its snapshot (bookings
// included), its queues, their usage (Snapshot.QueueUsage) and fair-share
// usage, and the jobs it placed.
func viewOf(f *fleet, snap *placement.Snapshot, queues []placement.Queue, usage map[string]placement.QueueUsage,
	fair map[string]float64, tally *jobTally, now time.Time, gpus *gpuView) *fleetView {
	v := &fleetView{clusters: map[string]clusterView{}, queues: map[string]*queueView{}, phases: map[v1alpha1.JobPhase]int{}}
	states := map[string]v1alpha1.ClusterState{}
	for _, c := range f.registered {
		st := c.Object.Status
		states[c.Name] = st.State
		cv := clusterView{state: st.State}
		if hb := registry.LastHeartbeat(c.Object, f.leases[c.Name]); hb != nil {
			cv.heartbeatAge, cv.hasHeartbeat = now.Sub(hb.Time).Seconds(), true
		}
		v.clusters[c.Name] = cv
	}
	for name, at := range f.received {
		v.setInventoryAge(name, now.Sub(at).Seconds())
	}
	for _, it := range f.unready {
		v.setInventoryAge(it.Name, now.Sub(it.Object.Received).Seconds())
	}
	v.gpus = gpus.of(f, snap, states, now)
	for _, q := range queues {
		qv := v.queue(q.Name)
		for class, quota := range q.Quotas {
			qv.nominal[className(class)] = quota.Nominal
			if quota.BorrowingLimit != nil {
				qv.borrowingLimit[className(class)] = *quota.BorrowingLimit
			}
		}
		for class, g := range usage[q.Name].GPUs {
			qv.usage[className(class)] = g
		}
		for class, g := range usage[q.Name].Borrowed {
			qv.borrowed[className(class)] = g
		}
		qv.fairShare = fair[q.Name]
	}
	v.phases = tally.phases
	for name, t := range tally.queues {
		qv := v.queue(name)
		qv.pendingJobs, qv.pendingGPUs, qv.activeJobs = t.waiting, t.waitingGPUs, t.active
	}
	return v
}

func (v *fleetView) setInventoryAge(cluster string, age float64) {
	cv := v.clusters[cluster]
	cv.invAge, cv.hasInvt = age, true
	v.clusters[cluster] = cv
}

func (v *fleetView) queue(name string) *queueView {
	qv, ok := v.queues[name]
	if !ok {
		qv = &queueView{nominal: map[string]int{}, borrowingLimit: map[string]int{}, usage: map[string]int{}, borrowed: map[string]int{}}
		v.queues[name] = qv
	}
	return qv
}

// className is the gpu_class label of a quota or usage key: the engine's
// "" (all GPUs and slices together) is "all".
func className(class string) string {
	if class == "" {
		return "all"
	}
	return class
}

// admissionWaitStart is when a job placed now started waiting: its submit
// time for its first placement, else when its Placed condition last turned
// False (the requeue). ok is false when neither is known.
func admissionWaitStart(j *v1alpha1.Job) (time.Time, bool) {
	if j.Status.Epoch == 0 && j.Status.SubmitTime != nil {
		return j.Status.SubmitTime.Time.Time, true
	}
	c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPlaced)
	if c != nil && c.Status == metav1.ConditionFalse {
		return c.LastTransitionTime.Time, true
	}
	return time.Time{}, false
}
