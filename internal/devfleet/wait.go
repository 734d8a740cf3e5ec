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
