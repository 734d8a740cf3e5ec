// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/agent/cluster"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/builders/testnode"
)

func next(t *testing.T, ch <-chan fedinv.Cluster, want func(fedinv.Cluster) bool) fedinv.Cluster {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-ch:
			if want(c) {
				return c
			}
		case <-deadline:
			t.Fatal("inventory never reached the wanted state")
		}
	}
}

func TestWatcherPublishesChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs := fake.NewClientset(testnode.New("n1").GPUs(8).Label(fedinv.LabelGPUProduct, "NVIDIA-H100-80GB-HBM3").Obj(), testnode.New("n2").GPUs(8).Label(fedinv.LabelGPUProduct, "NVIDIA-H100-80GB-HBM3").Obj())
	c, err := cluster.New(cs)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Run(ctx) }()
	keys := fedinv.DefaultLabelKeys()
	w := NewWatcher(c, "eu1", fedinv.TopologyChoice{Map: &keys}, WithInterval(20*time.Millisecond), WithLabels(map[string]string{"region": "eu"}))
	ch := w.Subscribe()
	go func() { _ = w.Run(ctx) }()

	first := next(t, ch, func(c fedinv.Cluster) bool { return c.FreeGPUs() == 16 })
	if first.Labels["region"] != "eu" || first.Name != "eu1" {
		t.Errorf("first = %+v", first)
	}
	n := testnode.New("n1").GPUs(8).Label(fedinv.LabelGPUProduct, "NVIDIA-H100-80GB-HBM3").Obj()
	n.Spec.Unschedulable = true
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := next(t, ch, func(c fedinv.Cluster) bool { return c.FreeGPUs() == 8 })
	if second.Generation <= first.Generation {
		t.Errorf("generation %d not above %d", second.Generation, first.Generation)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n2", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{fedinv.ResourceGPU: *resource.NewQuantity(3, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	third := next(t, ch, func(c fedinv.Cluster) bool { return c.FreeGPUs() == 5 })
	if latest, ok := w.Latest(); !ok || latest.Generation != third.Generation {
		t.Errorf("Latest = %d, want %d", latest.Generation, third.Generation)
	}
	// Changes that do not touch the inventory publish nothing: a terminated
	// pod (the shared cache keeps it, Build skips it) and a node without GPUs.
	done := pod.DeepCopy()
	done.Name, done.Status.Phase = "done", corev1.PodSucceeded
	if _, err := cs.CoreV1().Pods("default").Create(ctx, done, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-ch:
		t.Errorf("published an unchanged inventory (generation %d)", c.Generation)
	case <-time.After(200 * time.Millisecond):
	}
}
