// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"testing"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/builders/testpod"
)

// lister serves pods from an indexer, as the pod controller's informer does.
func lister(t *testing.T, pods ...*corev1.Pod) corelisters.PodLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewPodLister(idx)
}

func TestMembers(t *testing.T) {
	const node = "shoal-eu1-h100"
	m := &members{node: node, lister: lister(t,
		testpod.New("b").Namespace("shoal-jobs").Node(node).GPUs(8).Phase(corev1.PodRunning).Label(v1alpha1.LabelJob, "j").Obj(),
		testpod.New("a").Namespace("shoal-jobs").Node(node).GPUs(4).Phase(corev1.PodPending).Label(v1alpha1.LabelJob, "j").Obj(),
		testpod.New("done").Namespace("shoal-jobs").Node(node).GPUs(8).Phase(corev1.PodSucceeded).Obj(),
		testpod.New("init").Namespace("team").Node(node).GPUs(1).
			InitContainer("warm", map[corev1.ResourceName]int64{fedinv.ResourceGPU: 2}).Obj(),
		// The informer is filtered to the node; a pod of another node is never a member.
		testpod.New("other").Namespace("shoal-jobs").Node("shoal-eu1-a100").GPUs(8).Obj(),
	)}
	pods, err := m.list()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	if want := "[shoal-jobs/a shoal-jobs/b shoal-jobs/done team/init]"; stringOf(names) != want {
		t.Errorf("members = %v, want %s", names, want)
	}
	served, err := m.served()
	if err != nil || len(served) != 2 || served[0].Name != "a" || served[1].Name != "b" {
		t.Errorf("served = %v, %v, want the placed members a and b", served, err)
	}
	if got := m.held(fedinv.ResourceGPU); got != 4+8+2 {
		t.Errorf("held = %d, want 14 (terminated pods hold nothing, an init container's larger request counts)", got)
	}
	if p, err := m.check("shoal-jobs", "a"); err != nil || p.Name != "a" {
		t.Errorf("member refused: %v", err)
	}
	// "init" is bound to the node, but Shoal did not place it (no job label).
	for _, p := range [][2]string{{"shoal-jobs", "other"}, {"shoal-jobs", "nope"}, {"team", "a"}, {"team", "init"}} {
		if _, err := m.check(p[0], p[1]); !errdefs.IsNotFound(err) {
			t.Errorf("check(%s/%s) = %v, want not found", p[0], p[1], err)
		}
	}
}

func stringOf(s []string) string {
	out := "["
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out + "]"
}
