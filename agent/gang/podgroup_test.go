// SPDX-License-Identifier: Apache-2.0

package gang_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/builders/testnode"
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

// TestSlicePodGroupTopology: a slice's PodGroup is constrained to the
// tightest topology level all its target nodes share, in the agent's
// topology map; a cluster that refuses the constraint (the feature is off)
// gets the group without it, and is not asked again.
func TestSlicePodGroupTopology(t *testing.T) {
	keys := fedinv.DefaultLabelKeys()
	node := func(name, clique, rack string) *corev1.Node {
		return testnode.New(name).Allocatable(fedinv.ResourceGPU, 8).Label(keys.NVLink, clique).Label(keys.Rack, rack).
			Label(keys.Block, "b1").Obj()
	}
	for name, tc := range map[string]struct {
		targets []string
		refuse  bool
		want    string
	}{
		"one NVLink domain":          {targets: []string{"a1", "a2"}, want: keys.NVLink},
		"one rack, two domains":      {targets: []string{"a1", "b1"}, want: keys.Rack},
		"one block, two racks":       {targets: []string{"a1", "c1"}, want: keys.Block},
		"feature off in the cluster": {targets: []string{"a1", "a2"}, refuse: true, want: ""},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			local := fake.NewClientset(node("a1", "cl-a", "r1"), node("a2", "cl-a", "r1"), node("b1", "cl-b", "r1"),
				node("c1", "cl-c", "r2"))
			local.Resources = []*metav1.APIResourceList{{GroupVersion: schedulingv1beta1.SchemeGroupVersion.String(),
				APIResources: []metav1.APIResource{{Name: "podgroups", Namespaced: true}}}}
			refused := 0
			if tc.refuse {
				local.PrependReactor("create", "podgroups", func(a k8stesting.Action) (bool, runtime.Object, error) {
					pg := a.(k8stesting.CreateAction).GetObject().(*schedulingv1beta1.PodGroup)
					if pg.Spec.SchedulingConstraints == nil {
						return false, nil, nil
					}
					refused++
					return true, nil, apierrors.NewInvalid(schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup").GroupKind(),
						pg.Name, field.ErrorList{field.Forbidden(field.NewPath("spec", "schedulingConstraints"), "disabled by feature-gate")})
				})
			}
			c := syncedCache(t, local)
			g := gang.New(c, gang.WithTopology(func() (fedinv.LabelKeys, bool) { return keys, true }))
			if err := g.Load(ctx); err != nil {
				t.Fatal(err)
			}
			for _, job := range []string{"llama", "mistral"} { // two slices: the second is not refused again
				var names []string
				for i, target := range tc.targets {
					hub := hubPod(fmt.Sprintf("%s-%d", job, i), "3", "")
					hub.Labels[v1alpha1.LabelJob] = job
					hub.Annotations[v1alpha1.AnnotationSliceSize] = strconv.Itoa(len(tc.targets))
					hub.Annotations[v1alpha1.AnnotationTargetNode] = target
					lp := hub.DeepCopy()
					if err := g.Mutate(hub, lp); err != nil {
						t.Fatal(err)
					}
					if _, err := local.CoreV1().Pods("ns").Create(ctx, lp, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					names = append(names, lp.Name)
				}
				waitCached(t, c, "ns", names...)
				commit := hubPod(names[0], "3", "3")
				commit.Labels[v1alpha1.LabelJob] = job
				commit.Annotations[v1alpha1.AnnotationSliceSize] = strconv.Itoa(len(tc.targets))
				commit.Annotations[v1alpha1.AnnotationTargetNode] = tc.targets[0]
				if err := g.Commit(ctx, commit); err != nil {
					t.Fatal(err)
				}
				pg, err := local.SchedulingV1beta1().PodGroups("ns").Get(ctx, job+"-e3", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got := ""
				if sc := pg.Spec.SchedulingConstraints; sc != nil && len(sc.Topology) == 1 {
					got = sc.Topology[0].Key
				}
				if got != tc.want || pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != int32(len(tc.targets)) {
					t.Fatalf("%s: PodGroup topology key %q, policy %+v; want key %q, minCount %d", job, got,
						pg.Spec.SchedulingPolicy, tc.want, len(tc.targets))
				}
			}
			if tc.refuse && refused != 1 {
				t.Errorf("the cluster was asked %d times for a constraint it refuses, want once", refused)
			}
		})
	}
}
