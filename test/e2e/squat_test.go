// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// onCluster pins a job to one workload cluster.
func onCluster(c string) func(*v1alpha1.Job) {
	return func(j *v1alpha1.Job) {
		j.Spec.Placement.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{labelCluster: c}}
	}
}

// squat binds local pods holding gpus GPUs to nodes of a workload cluster,
// behind Shoal's back, and removes them when the test ends.
func squat(t *testing.T, cluster string, nodes []string, gpus int64) {
	t.Helper()
	cs := workloads[cluster]
	for i, n := range nodes {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("squatter-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "c", Image: "busybox",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}
		if _, err := cs.CoreV1().Pods("default").Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		zero := int64(0)
		for i := range nodes {
			_ = cs.CoreV1().Pods("default").Delete(ctx, fmt.Sprintf("squatter-%d", i), metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	})
}

// clusterNodes returns the GPU node names of a workload cluster.
func clusterNodes(t *testing.T, cluster string) []string {
	t.Helper()
	l, err := workloads[cluster].CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range l.Items {
		if _, ok := n.Status.Allocatable["nvidia.com/gpu"]; ok {
			out = append(out, n.Name)
		}
	}
	return out
}

// waitFree waits until the hub's inventory of a cluster shows free GPUs.
func waitFree(t *testing.T, cluster string, free int) {
	t.Helper()
	eventually(t, 30*time.Second, cluster+" inventory with "+strconv.Itoa(free)+" free GPUs", func(ctx context.Context) (bool, error) {
		invs, err := h.reg.Inventories(ctx)
		if err != nil {
			return false, err
		}
		for _, inv := range invs {
			if inv.Name == cluster {
				return inv.FreeGPUs() == free, fmt.Errorf("%d free", inv.FreeGPUs())
			}
		}
		return false, nil
	})
}
