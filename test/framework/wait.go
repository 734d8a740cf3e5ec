// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// PollInterval is how often the Wait helpers check their condition.
const PollInterval = 200 * time.Millisecond

// WaitNodesReady waits until at least n nodes of the cluster are Ready.
func WaitNodesReady(ctx context.Context, cs kubernetes.Interface, n int, timeout time.Duration) error {
	var ready int
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		ready, err = devfleet.CountReadyNodes(ctx, cs)
		return err == nil && ready >= n, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d nodes Ready after %s: %w", ready, n, timeout, err)
	}
	return nil
}

// WaitPod polls the pod until cond holds and returns it; the error on
// timeout carries the pod's last phase and conditions.
func WaitPod(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration,
	cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return cond(p), nil
	})
	if err != nil {
		if pod == nil {
			return nil, fmt.Errorf("pod %s/%s: %w", ns, name, err)
		}
		return pod, fmt.Errorf("pod %s/%s (phase %s, conditions %v): %w", ns, name, pod.Status.Phase, pod.Status.Conditions, err)
	}
	return pod, nil
}

// WaitPodRunning waits until the pod's phase is Running.
func WaitPodRunning(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) (*corev1.Pod, error) {
	return WaitPod(ctx, cs, ns, name, timeout, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
}

// WaitPodUnschedulable waits until the scheduler has marked the pod
// PodScheduled=False with reason Unschedulable and returns that condition.
func WaitPodUnschedulable(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) (*corev1.PodCondition, error) {
	pod, err := WaitPod(ctx, cs, ns, name, timeout, func(p *corev1.Pod) bool {
		c := PodCondition(p, corev1.PodScheduled)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
	})
	if err != nil {
		return nil, err
	}
	return PodCondition(pod, corev1.PodScheduled), nil
}

// PodCondition returns the pod's condition of type t, or nil.
func PodCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// GPUPod returns a one-container pod that asks for count of the extended
// resource (e.g. nvidia.com/gpu or nvidia.com/mig-1g.10gb); see devfleet.GPUPod.
func GPUPod(ns, name, res string, count int64) *corev1.Pod {
	return devfleet.GPUPod(ns, name, res, count)
}
