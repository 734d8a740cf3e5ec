// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Queue is a node of the hierarchical queue tree (org, org/team,
// org/team/project): GPU quotas per GPU class and a fair-share weight.
// +kubebuilder:object:root=true
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   QueueSpec   `json:"spec,omitempty"`
	Status QueueStatus `json:"status,omitempty"`
}

// MaxQueueDepth is the deepest queue name: org/team/project.
const MaxQueueDepth = 3

// QueueSpec is a queue's quotas and weight.
type QueueSpec struct {
	// Weight is the queue's fair share relative to its siblings; default 1,
	// must be positive.
	Weight *int32 `json:"weight,omitempty"`
	// Quotas maps a GPU class (e.g. h100, a100-80gb, mig-1g.10gb) to the
	// GPUs guaranteed to this queue and how many more it may borrow.
	Quotas map[string]GPUQuota `json:"quotas,omitempty"`
	// ReclaimBorrowed lets the queue take back its nominal quota from
	// queues that borrowed it: a job of this queue (or of a descendant)
	// that fits within the queue's nominal quota may preempt preemptible
	// jobs of the same or lower priority from queues holding more than
	// their nominal, only their surplus, each victim with its preemption
	// grace period. The placement engine's preemption rules on waiting time
	// apply. Default false (Kueue's reclaimWithinCohort: Never).
	ReclaimBorrowed bool `json:"reclaimBorrowed,omitempty"`
	// PodSecurity is the Pod Security Standards level (restricted, baseline
	// or privileged) the members of this queue's jobs, and of its
	// descendants', are held to: checked at submit, again by the agent
	// before it creates a member, and enforced by the workload cluster's
	// admission on the queue's namespace there. Unset inherits; a queue is
	// never more permissive than its parent (the effective level is the
	// strictest set along the path, EffectivePodSecurity); baseline when no
	// queue on the path sets one.
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`
	// Pools binds the queue to GPU pools (docs/pools.md): its jobs, and its
	// descendants' unless they name pools of their own, are placed only on
	// nodes of these pools. Every pool must exist. Empty: the nearest
	// ancestor's, or anywhere.
	Pools []string `json:"pools,omitempty"`
}

// GPUQuota is a queue's share of one GPU class.
type GPUQuota struct {
	// Nominal is the number of GPUs guaranteed to the queue.
	Nominal int32 `json:"nominal"`
	// BorrowingLimit caps the GPUs the queue may borrow beyond Nominal from
	// idle quota of other queues; nil means no limit, 0 forbids borrowing.
	BorrowingLimit *int32 `json:"borrowingLimit,omitempty"`
}

// QueueStatus is the hub's view of a queue's usage, written by the
// scheduler (through hub/queues) when it changes.
type QueueStatus struct {
	// PendingJobs counts the jobs naming this queue that wait for placement.
	PendingJobs int32 `json:"pendingJobs,omitempty"`
	// ActiveJobs counts the jobs naming this queue that hold GPUs (placed,
	// starting or running).
	ActiveJobs int32 `json:"activeJobs,omitempty"`
	// UsedGPUs maps a GPU class to the GPUs (MIG classes: slices) held by
	// the jobs of this queue and its descendants.
	UsedGPUs map[string]int32 `json:"usedGPUs,omitempty"`
	// BorrowedGPUs maps a GPU class the queue has a quota for to the GPUs
	// held beyond the nominal quota, borrowed from idle quota of its cohort.
	BorrowedGPUs map[string]int32 `json:"borrowedGPUs,omitempty"`
	// Conditions of the queue.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// QueueParent returns the parent of a hierarchical queue name ("a/b" for
// "a/b/c") and false for a top-level queue.
func QueueParent(name string) (string, bool) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return "", false
	}
	return name[:i], true
}

// QueueAncestors returns the ancestors of a queue name, root first
// ("a", "a/b" for "a/b/c").
func QueueAncestors(name string) []string {
	var out []string
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			out = append(out, name[:i])
		}
	}
	return out
}
