// SPDX-License-Identifier: Apache-2.0

package fleet_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

func clientFor(t *testing.T, c *devfleet.Cluster) kubernetes.Interface {
	t.Helper()
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestServerVersion(t *testing.T) {
	skipShort(t)
	for _, c := range env.Clusters {
		v, err := clientFor(t, c).Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if v.GitVersion != "v1.37.2" {
			t.Errorf("%s: server version %s, want v1.37.2", c.Name, v.GitVersion)
		}
	}
}

func TestGPUCapacityAndLabelsVisible(t *testing.T) {
	skipShort(t)
	for _, c := range env.Workloads() {
		t.Run(c.Name, func(t *testing.T) {
			p, err := devfleet.LookupProfile(c.Profile)
			if err != nil {
				t.Fatal(err)
			}
			list, err := clientFor(t, c).CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != c.Nodes || c.Nodes < 16 {
				t.Fatalf("%d nodes, want %d (at least 16)", len(list.Items), c.Nodes)
			}
			for _, n := range list.Items {
				for res, want := range p.Resources {
					got := n.Status.Allocatable[corev1.ResourceName(res)]
					if got.String() != want {
						t.Errorf("%s: allocatable %s = %s, want %s", n.Name, res, got.String(), want)
					}
				}
				for k, want := range p.Labels {
					if n.Labels[k] != want {
						t.Errorf("%s: label %s = %q, want %q", n.Name, k, n.Labels[k], want)
					}
				}
				if n.Labels[devfleet.LabelRack] == "" || n.Labels[devfleet.LabelZone] == "" {
					t.Errorf("%s: missing topology labels: %v", n.Name, n.Labels)
				}
			}
		})
	}
}

func TestPodTooBigStaysPending(t *testing.T) {
	skipShort(t)
	c := env.Workloads()[0]
	cs := clientFor(t, c)
	gpus := int64(mustProfile(t, c.Profile).GPUsPerNode() + 1)
	pod := framework.GPUPod("default", "too-big", devfleet.ResourceGPU, gpus)
	if _, err := cs.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePod(cs, pod) })
	cond, err := framework.WaitPodUnschedulable(t.Context(), cs, "default", pod.Name, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cond.Message, "Insufficient "+devfleet.ResourceGPU) {
		t.Errorf("PodScheduled message %q does not name Insufficient %s", cond.Message, devfleet.ResourceGPU)
	}
	got, err := cs.CoreV1().Pods("default").Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodPending || got.Spec.NodeName != "" {
		t.Errorf("pod asking for %d GPUs: phase %s on node %q, want Pending and unbound", gpus, got.Status.Phase, got.Spec.NodeName)
	}
}

func TestGPUPodsRun(t *testing.T) {
	skipShort(t)
	tests := []struct {
		cluster int
		res     string
		count   int64
	}{
		{0, devfleet.ResourceGPU, 8},
		{1, devfleet.ResourceMIG1g10gb, 1},
		{1, devfleet.ResourceMIG3g40gb, 2},
	}
	for _, tt := range tests {
		c := env.Workloads()[tt.cluster]
		t.Run(c.Name+"/"+tt.res, func(t *testing.T) {
			cs := clientFor(t, c)
			name := "run-" + strings.NewReplacer("nvidia.com/", "", ".", "-").Replace(tt.res) + "-" + strconv.FormatInt(tt.count, 10)
			pod := framework.GPUPod("default", name, tt.res, tt.count)
			if _, err := cs.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { deletePod(cs, pod) })
			got, err := framework.WaitPodRunning(t.Context(), cs, "default", pod.Name, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got.Spec.NodeName, c.Name+"-") {
				t.Errorf("pod bound to %q, want a node of %s", got.Spec.NodeName, c.Name)
			}
		})
	}
}

func mustProfile(t *testing.T, name string) *devfleet.Profile {
	t.Helper()
	p, err := devfleet.LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func deletePod(cs kubernetes.Interface, pod *corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	zero := int64(0)
	_ = cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}
