// SPDX-License-Identifier: Apache-2.0

// Package gang is the agent's half of the hub's two-phase gang dispatch
// (docs/scheduling.md); its Gate is the pod syncer's podsync.Gate.
//
// Prepare: Mutate, called by the pod syncer before it creates a local pod,
// puts the scheduling gate (v1alpha1.SchedulingGate) on the local pod of
// every gang member (a hub pod with the epoch annotation) and refuses
// members of an epoch older than one already seen for the same job.
// PrepareCreate, called just before the create, checks that the member fits
// on its target node (every GPU and MIG resource it asks for free there, by
// the request rule of federation/inventory, counting the other prepared
// members that target it) and, when it does, holds it: the pod syncer
// reports it Prepared (with the other held members of its epoch, on one
// hub pod: v1alpha1.PodConditionPreparedMembers) and creates its local pod only at the commit
// (hold.go), or, for a member whose commit came already or of a
// native-gang slice, creates it prepared (v1alpha1.AnnotationPrepared,
// which stands for the Prepared condition, v1alpha1.PreparedCondition).
// Run watches the gated local pods in the
// shared cache of agent/cluster and prepares the others after their create
// (a compute-domain member, one waiting for terminating pods, one that
// does not fit, a pod an older agent made), reporting the pod condition
// v1alpha1.PodConditionPrepared, True or False with a reason; either flows
// back to the hub pod with the rest of the status.
//
// Commit: when the hub stamps the commit annotation (the epoch) on the hub
// pod, Commit creates the held members of the epoch, ungated, and lifts the
// gates of the gated ones; the cluster's kube-scheduler binds them. A member already committed when the agent first
// sees it (an agent restart) is created without a gate.
package gang
