// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// JobPhase is where a Job is in its life.
type JobPhase string

// The job phases. Succeeded, Failed and Cancelled are terminal.
const (
	// JobPending: accepted and queued, not placed yet.
	JobPending JobPhase = "Pending"
	// JobPlaced: the gang has a reservation and its members are being dispatched.
	JobPlaced JobPhase = "Placed"
	// JobRunning: every member runs.
	JobRunning JobPhase = "Running"
	// JobSucceeded: the gang completed.
	JobSucceeded JobPhase = "Succeeded"
	// JobFailed: the gang failed beyond its failure policy.
	JobFailed JobPhase = "Failed"
	// JobCancelled: the user cancelled the job.
	JobCancelled JobPhase = "Cancelled"
)

// JobPhases lists every phase.
var JobPhases = []JobPhase{JobPending, JobPlaced, JobRunning, JobSucceeded, JobFailed, JobCancelled}

// Terminal reports whether the phase is final.
func (p JobPhase) Terminal() bool {
	return p == JobSucceeded || p == JobFailed || p == JobCancelled
}

// Valid reports whether p is one of JobPhases.
func (p JobPhase) Valid() bool {
	for _, x := range JobPhases {
		if p == x {
			return true
		}
	}
	return false
}

// Job condition types.
const (
	// JobConditionAdmitted is True once the hub accepted the job into its queue.
	JobConditionAdmitted = "Admitted"
	// JobConditionPlaced is True while the gang holds a reservation.
	JobConditionPlaced = "Placed"
	// JobConditionRunning is True while every member runs.
	JobConditionRunning = "Running"
	// JobConditionFinished is True once the job is terminal; its reason says how.
	JobConditionFinished = "Finished"
)

// JobStatus is what the hub observed about a Job.
type JobStatus struct {
	// Owner is the user who submitted the job (the name in the caller's
	// hub-issued certificate; "admin" for the bootstrap admin). Only the hub
	// sets it: the owner a client sends is replaced at submit.
	Owner string `json:"owner,omitempty"`
	// Phase summarises the job's state.
	Phase JobPhase `json:"phase,omitempty"`
	// Conditions are the detailed, typed states with reasons and messages.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Placement explains the scheduler's latest decision (or why there is none).
	Placement *PlacementStatus `json:"placement,omitempty"`
	// Members is each member's placement and phase.
	Members []MemberStatus `json:"members,omitempty"`
	// Restarts counts whole-gang restarts.
	Restarts int32 `json:"restarts,omitempty"`
	// Epoch is the placement epoch; a stale epoch is refused everywhere.
	Epoch int64 `json:"epoch,omitempty"`
	// Dispatch is the dispatcher's two-phase decision for the epoch, the
	// machine-readable form of the Dispatched condition.
	Dispatch *DispatchStatus `json:"dispatch,omitempty"`
	// SubmitTime is when the hub accepted the job, to the microsecond:
	// jobs of one priority are placed in this order, and a hub takes in
	// hundreds a second (before, whole seconds: the jobs of a second were
	// ordered by name, and the admission wait counted from the start of
	// the second). Records written with whole seconds are read as such
	// (MicroTime reads both).
	SubmitTime *MicroTime `json:"submitTime,omitempty"`
	// StartTime is when every member first ran.
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the job became terminal.
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Checkpoint is the latest checkpoint the job reported; a gang placed
	// again resumes from it (docs/checkpoints.md).
	Checkpoint *JobCheckpoint `json:"checkpoint,omitempty"`
}

// PlacementStatus is the scheduler's decision, or the reason for none.
type PlacementStatus struct {
	// Clusters the gang was placed on.
	Clusters []string `json:"clusters,omitempty"`
	// Domain is the topology domain holding the gang, when one does.
	Domain string `json:"domain,omitempty"`
	// Explanation says, for people, why the gang was placed there or why it waits.
	Explanation string `json:"explanation,omitempty"`
	// Time of the decision.
	Time *metav1.Time `json:"time,omitempty"`
}

// DispatchPhase is the two-phase dispatch decision of an epoch.
type DispatchPhase string

// The dispatch phases; each is also the reason of the Dispatched condition.
const (
	// DispatchPreparing: the members are being prepared in their clusters.
	DispatchPreparing DispatchPhase = ReasonPreparing
	// DispatchCommitted: every member was prepared; the commit is stamped.
	DispatchCommitted DispatchPhase = ReasonCommitted
	// DispatchAborting: the members are torn down and the job is requeued
	// with backoff.
	DispatchAborting DispatchPhase = ReasonAborting
	// DispatchRestarting: a member failed; the gang is torn down and placed again.
	DispatchRestarting DispatchPhase = ReasonRestarting
	// DispatchFailing: the gang failed beyond its failure policy and is torn down.
	DispatchFailing DispatchPhase = ReasonFailing
)

// DispatchStatus is the dispatcher's decision for one epoch. It is written
// before the decision is acted on, so a restarted hub finishes it.
type DispatchStatus struct {
	// Epoch the decision is for.
	Epoch int64 `json:"epoch"`
	// Phase is the decision.
	Phase DispatchPhase `json:"phase"`
	// Reason says why an abort was decided (PrepareFailed, PrepareTimeout,
	// StartTimeout); the requeued job's Placed condition carries it.
	Reason string `json:"reason,omitempty"`
	// Message says, for people, what was decided and why.
	Message string `json:"message,omitempty"`
	// Time is when the phase was entered; the prepare deadline counts from
	// the Preparing decision, the start deadline from the Committed one.
	Time *metav1.Time `json:"time,omitempty"`
}

// MemberPhase is the state of one member pod.
type MemberPhase string

// The member phases.
const (
	MemberPending   MemberPhase = "Pending"
	MemberPrepared  MemberPhase = "Prepared"
	MemberRunning   MemberPhase = "Running"
	MemberSucceeded MemberPhase = "Succeeded"
	MemberFailed    MemberPhase = "Failed"
)

// MemberStatus is one member's placement and phase.
type MemberStatus struct {
	// Index is the member's index in the gang, from 0.
	Index int32 `json:"index"`
	// Role is the member's role (jobs with spec.roles only).
	Role string `json:"role,omitempty"`
	// Cluster is the workload cluster the member was placed on.
	Cluster string `json:"cluster,omitempty"`
	// Node is the target node (or virtual node) of the member.
	Node string `json:"node,omitempty"`
	// Namespace is the hub-cluster namespace of the member's hub pod
	// (ClusterNamespace of Cluster). Records stored before it existed get
	// it when read (hub/store/migrate, storage version 2 of jobs).
	Namespace string `json:"namespace,omitempty"`
	// Domain is the topology domain of the member's target.
	Domain string `json:"domain,omitempty"`
	// Phase of the member pod.
	Phase MemberPhase `json:"phase,omitempty"`
	// Address is the member's pod IP (its node's IP with hostNetwork) while
	// it runs, as its agent reported it.
	Address string `json:"address,omitempty"`
	// Ready is the member pod's Ready condition.
	Ready bool `json:"ready,omitempty"`
}

// Clusters returns the distinct clusters of the job's members and placement.
func (s *JobStatus) Clusters() []string {
	seen := map[string]bool{}
	var out []string
	add := func(c string) {
		if c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	if s.Placement != nil {
		for _, c := range s.Placement.Clusters {
			add(c)
		}
	}
	for _, m := range s.Members {
		add(m.Cluster)
	}
	return out
}
