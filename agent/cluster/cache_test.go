// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func podOn(name, node, target string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "test"}}}, Spec: corev1.PodSpec{NodeName: node}}
	if target != "" {
		p.Annotations = map[string]string{v1alpha1.AnnotationTargetNode: target}
	}
	return p
}

func names(ps []*corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, p := range ps {
		out[p.Name] = true
	}
	return out
}

func TestCache(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	other := podOn("other", "n2", "")
	other.Labels = map[string]string{v1alpha1.LabelManaged: "true"}
	other.Annotations = map[string]string{v1alpha1.AnnotationVirtualNode: "shoal-eu1-h100"}
	other.Labels[v1alpha1.LabelJob] = "train"
	// A managed member in its queue's namespace, whose hub pod is in the
	// cluster's.
	elsewhere := podOn("elsewhere", "n2", "")
	elsewhere.Namespace = "q-team"
	elsewhere.Labels = map[string]string{v1alpha1.LabelManaged: "true", v1alpha1.LabelJob: "train"}
	elsewhere.Annotations = map[string]string{v1alpha1.AnnotationHubNamespace: "shoal-c-eu1"}
	unmanaged := podOn("bound", "n1", "")
	unmanaged.Annotations = map[string]string{v1alpha1.AnnotationVirtualNode: "shoal-eu1-h100"}
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		unmanaged, podOn("member", "", "n1"), podOn("bound-member", "n1", "n2"), other, elsewhere)
	c, err := New(cs)
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int32
	reg, err := c.AddPodHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { seen.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	if !c.WaitForCacheSync(ctx, reg) {
		t.Fatal("not synced")
	}
	if seen.Load() != 5 {
		t.Errorf("handler saw %d pods, want 5", seen.Load())
	}
	if n, err := c.Nodes().Get("n1"); err != nil || n.Name != "n1" {
		t.Errorf("node: %v %v", n, err)
	}
	on, _ := c.PodsOnNode("n1")
	if got := names(on); len(got) != 2 || !got["bound"] || !got["bound-member"] {
		t.Errorf("PodsOnNode(n1) = %v", got)
	}
	targeting, _ := c.PodsTargeting("n1")
	if got := names(targeting); len(got) != 1 || !got["member"] {
		t.Errorf("PodsTargeting(n1) = %v", got)
	}
	if targeting, _ := c.PodsTargeting("n2"); len(targeting) != 0 {
		t.Errorf("a bound pod is indexed by its target: %v", names(targeting))
	}
	if got, _ := c.PodsOfVirtualNode("shoal-eu1-h100"); len(got) != 1 || got[0].Name != "other" {
		t.Errorf("PodsOfVirtualNode = %v", names(got))
	}
	if got, _ := c.PodsOfJob("", "train"); len(got) != 2 || !names(got)["other"] || !names(got)["elsewhere"] {
		t.Errorf("PodsOfJob(train) = %v, want other and elsewhere", names(got))
	}
	if got, _ := c.PodsOfJob("ns", "train"); len(got) != 1 || got[0].Name != "other" {
		t.Errorf("PodsOfJob(ns, train) = %v, want other", names(got))
	}
	if got, _ := c.PodsOfJob("", "none"); len(got) != 0 {
		t.Errorf("PodsOfJob(none) = %v", names(got))
	}
	if got, _ := c.PodsOfHubPod("ns", "other"); len(got) != 1 || got[0].Name != "other" {
		t.Errorf("PodsOfHubPod(ns/other) = %v", names(got))
	}
	if got, _ := c.PodsOfHubPod("shoal-c-eu1", "elsewhere"); len(got) != 1 || got[0].Namespace != "q-team" {
		t.Errorf("PodsOfHubPod(shoal-c-eu1/elsewhere) = %v, want the local pod in q-team", names(got))
	}
	if got, _ := c.PodsOfHubPod("ns", "bound"); len(got) != 0 {
		t.Errorf("an unmanaged pod is indexed by hub pod: %v", names(got))
	}
	p, err := c.Pods().Pods("ns").Get("bound")
	if err != nil || p.ManagedFields != nil {
		t.Errorf("cached pod %v (err %v): managed fields kept", p, err)
	}
	// A handler added after the sync sees every cached pod.
	var late atomic.Int32
	reg2, _ := c.AddPodHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { late.Add(1) }})
	if !c.WaitForCacheSync(ctx, reg2) || late.Load() != 5 {
		t.Errorf("late handler saw %d pods, want 5", late.Load())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end with its context")
	}
}

// TestRunEndsUnsynced: a cluster that never answers a list leaves the cache
// unsynced; Run says so when its context ends.
func TestRunEndsUnsynced(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("unreachable")
	})
	c, err := New(cs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := c.Run(ctx); !errors.Is(err, ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run = %v, want ErrNotSynced and the context's error", err)
	}
	if c.WaitForCacheSync(ctx) {
		t.Error("WaitForCacheSync true on an unsynced cache")
	}
}
