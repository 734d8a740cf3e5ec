// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// WaitPodRunning polls the pod until its phase is Running; the error on
// timeout carries its last phase and conditions (e.g. the scheduler's reason).
func WaitPodRunning(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil && pod != nil {
		return pod, fmt.Errorf("pod %s/%s is %s (conditions %v): %w", ns, name, pod.Status.Phase, pod.Status.Conditions, err)
	}
	return pod, err
}

// VirtualNodeNamespace is the hub-cluster namespace a pod bound to virtual
// node must be in for its agent to see it: the namespace of the node's
// cluster (v1alpha1.ClusterNamespace), the only one the agent watches.
func VirtualNodeNamespace(ctx context.Context, hub kubernetes.Interface, node string) (string, error) {
	n, err := hub.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	c := n.Labels[v1alpha1.LabelCluster]
	if c == "" {
		return "", fmt.Errorf("node %s is not a virtual node: no %s label", node, v1alpha1.LabelCluster)
	}
	return v1alpha1.ClusterNamespace(c), nil
}
