// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPUPod returns a one-container pod that asks for count of the extended
// resource res (e.g. nvidia.com/gpu or nvidia.com/mig-1g.10gb), as requests
// and limits, the way a CUDA workload asks the device plugin for GPUs.
func GPUPod(ns, name, res string, count int64) *corev1.Pod {
	q := *resource.NewQuantity(count, resource.DecimalSI)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04",
				Command: []string{"nvidia-smi", "-L"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceName(res): q},
					Limits:   corev1.ResourceList{corev1.ResourceName(res): q},
				},
			}},
		},
	}
}
