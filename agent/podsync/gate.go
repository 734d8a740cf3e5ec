// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Gate is what the syncer asks before and after it runs a hub pod locally;
// the gang dispatch (agent/gang: scheduling gate, prepare, commit, epochs)
// implements it. Both calls run on the virtual-kubelet pod worker of the hub
// pod (virtual-kubelet's PodLifecycleHandler.CreatePod and UpdatePod), so
// while one blocks, that pod's status and later versions wait; other pods
// are served by other workers. An error fails the call for virtual-kubelet,
// which records it on the hub pod and retries with backoff.
type Gate interface {
	// Mutate adjusts the local pod built from hub before it is created (for
	// a gang member: the scheduling gate and the epoch). It must not block:
	// it reads and writes memory only. An error refuses the pod; nothing is
	// created.
	Mutate(hub, local *corev1.Pod) error
	// PrepareCreate may prepare the local pod (after Mutate) just before
	// it is created, marking it so that it needs no write of its own
	// after the create (for a gang member: the fit check and
	// v1alpha1.AnnotationPrepared). It may block on workload-cluster
	// writes, bounded by ctx. done must be called once the create has
	// returned, with the pod it made (nil when it made none). hold says
	// the pod is prepared and must not be created now: the syncer reports
	// it Pending and Prepared, and creates it when the gate asks
	// (Syncer.CreateHeld, at the commit).
	PrepareCreate(ctx context.Context, hub, local *corev1.Pod) (done func(created *corev1.Pod), hold bool)
	// Release says the hub pod is being deleted: a member held since
	// PrepareCreate will not be created.
	Release(hub *corev1.Pod)
	// Commit sees every newer version of a tracked hub pod (for a gang
	// member: the hub's commit, on which it lifts the gate). It may block on
	// writes to the workload cluster, bounded by ctx.
	Commit(ctx context.Context, hub *corev1.Pod) error
}

// noGate is the Gate of a syncer without one: pods are created as they are.
type noGate struct{}

func (noGate) Mutate(_, _ *corev1.Pod) error             { return nil }
func (noGate) Commit(context.Context, *corev1.Pod) error { return nil }
func (noGate) PrepareCreate(context.Context, *corev1.Pod, *corev1.Pod) (func(*corev1.Pod), bool) {
	return func(*corev1.Pod) {}, false
}
func (noGate) Release(*corev1.Pod) {}
