// SPDX-License-Identifier: Apache-2.0

package gang_test

import (
	"context"
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestSliceJoinsItsPodGroup: where the cluster serves PodGroups, a member
// with a slice size joins its epoch's group at creation, and its commit
// makes the group (gang, minCount the slice size, owned by the slice's
// pods) before it lifts the gate; a cluster without the API gets neither.
func TestSliceJoinsItsPodGroup(t *testing.T) {
	for _, serves := range []bool{true, false} {
		ctx := context.Background()
		local := fake.NewClientset(gpuNode())
		if serves {
			local.Resources = []*metav1.APIResourceList{{GroupVersion: schedulingv1beta1.SchemeGroupVersion.String(),
				APIResources: []metav1.APIResource{{Name: "podgroups", Namespaced: true}}}}
		}
		c, err := cluster.New(local)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = c.Run(t.Context()) }()
		if !c.WaitForCacheSync(t.Context()) || c.ServesPodGroups() != serves {
			t.Fatalf("cache synced, ServesPodGroups = %v, want %v", c.ServesPodGroups(), serves)
		}
		g := gang.New(c)
		if err := g.Load(ctx); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"m0", "m1"} {
			hub := hubPod(name, "3", "")
			hub.Annotations[v1alpha1.AnnotationSliceSize] = "2"
			lp := hub.DeepCopy()
			if err := g.Mutate(hub, lp); err != nil {
				t.Fatal(err)
			}
			sg := lp.Spec.SchedulingGroup
			if serves != (sg != nil && sg.PodGroupName != nil && *sg.PodGroupName == "llama-e3") {
				t.Fatalf("serves %v: schedulingGroup %+v", serves, sg)
			}
			if _, err := local.CoreV1().Pods("ns").Create(ctx, lp, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitCached(t, c, "ns", "m0", "m1")
		commit := hubPod("m0", "3", "3")
		commit.Annotations[v1alpha1.AnnotationSliceSize] = "2"
		if err := g.Commit(ctx, commit); err != nil {
			t.Fatal(err)
		}
		pg, err := local.SchedulingV1beta1().PodGroups("ns").Get(ctx, "llama-e3", metav1.GetOptions{})
		if !serves {
			if err == nil {
				t.Fatal("a cluster without the API got a PodGroup")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 2 || len(pg.OwnerReferences) != 2 {
			t.Fatalf("PodGroup policy %+v, owners %+v", pg.Spec.SchedulingPolicy, pg.OwnerReferences)
		}
		lp, _ := local.CoreV1().Pods("ns").Get(ctx, "m0", metav1.GetOptions{})
		if gated(lp) {
			t.Fatal("m0 still gated after its commit")
		}
	}
}

// waitCached waits until the cache holds the named pods.
func waitCached(t *testing.T, c *cluster.Cache, ns string, names ...string) {
	t.Helper()
	for _, n := range names {
		for {
			if _, err := c.Pods().Pods(ns).Get(n); err == nil {
				break
			}
			select {
			case <-t.Context().Done():
				t.Fatal("cache never held", n)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}
