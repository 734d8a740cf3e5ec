// SPDX-License-Identifier: Apache-2.0

package gang_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/builders/testnode"
)

// failures records the members the Gate stops.
type failures struct {
	mu     sync.Mutex
	reason map[string]string
}

func (f *failures) Fail(_ context.Context, _, name, reason, _ string, _ *int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reason[name] = reason
	return nil
}

func (f *failures) get() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.reason {
		out[k] = v
	}
	return out
}

// eventually polls cond every 20 ms for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestComputeDomainPreparedBeforeCommitGuardedAfter: three members of a
// compute-domain gang, two on nodes of clique A and one on clique B. Each
// local pod names its clique's channel template; prepare creates one
// ComputeDomain per clique (numNodes 2 and 1, owned by the clique's pods)
// and reports no member Prepared until the domain's channel template
// exists. After the commit, the domain that turns Ready is left alone;
// the one still not Ready after the bound has its member stopped with
// ComputeDomainNotReady.
func TestComputeDomainPreparedBeforeCommitGuardedAfter(t *testing.T) {
	ctx := t.Context()
	node := func(name, clique string) *corev1.Node {
		return testnode.New(name).Allocatable(fedinv.ResourceGPU, 8).Label(fedinv.LabelGPUClique, clique).Obj()
	}
	local := fake.NewClientset(node("n0", "u.1"), node("n1", "u.1"), node("n2", "u.2"))
	local.Resources = []*metav1.APIResourceList{{GroupVersion: fedinv.ComputeDomainGroup + "/" + fedinv.ComputeDomainVersion,
		APIResources: []metav1.APIResource{{Name: fedinv.ComputeDomainResource, Namespaced: true, Kind: fedinv.ComputeDomainKind}}}}
	gvr := gang.ComputeDomainResource
	domains := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: fedinv.ComputeDomainKind + "List"})
	c, err := cluster.New(local)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Run(ctx) }()
	if !c.WaitForCacheSync(ctx) || !c.ServesComputeDomains() {
		t.Fatal("cache did not sync or does not see ComputeDomains served")
	}
	clock := testingclock.NewFakePassiveClock(time.Now())
	g := gang.New(c, gang.WithComputeDomains(domains, time.Minute), gang.WithClock(clock))
	stopped := &failures{reason: map[string]string{}}
	g.SetStopper(stopped)
	go func() { _ = g.Run(ctx) }()
	<-g.Loaded()

	targets := map[string]string{"m0": "n0", "m1": "n1", "m2": "n2"}
	hubOf := func(name, commit string) *corev1.Pod {
		p := hubPod(name, "3", commit)
		p.Annotations[v1alpha1.AnnotationTargetNode] = targets[name]
		p.Annotations[v1alpha1.AnnotationComputeDomain] = `{"nodes":["n0","n1","n2"]}`
		return p
	}
	cdA, cdB := v1alpha1.ComputeDomainName("llama", 3, "u.1"), v1alpha1.ComputeDomainName("llama", 3, "u.2")
	for _, name := range []string{"m0", "m1", "m2"} {
		hub := hubOf(name, "")
		lp := hub.DeepCopy()
		if err := g.Mutate(hub, lp); err != nil {
			t.Fatal(err)
		}
		want := v1alpha1.ComputeDomainChannelTemplate(cdA)
		if name == "m2" {
			want = v1alpha1.ComputeDomainChannelTemplate(cdB)
		}
		rc := lp.Spec.ResourceClaims
		if len(rc) != 1 || rc[0].ResourceClaimTemplateName == nil || *rc[0].ResourceClaimTemplateName != want ||
			len(lp.Spec.Containers[0].Resources.Claims) != 1 {
			t.Fatalf("%s: resourceClaims %+v, want template %s used by the first container", name, rc, want)
		}
		lp.UID = types.UID("uid-" + name) // the fake API server assigns none
		if _, err := local.CoreV1().Pods("ns").Create(ctx, lp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	getCD := func(name string) *unstructured.Unstructured {
		cd, err := domains.Resource(gvr).Namespace("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return cd
	}
	eventually(t, "both ComputeDomains with all their owners", func() bool {
		a, b := getCD(cdA), getCD(cdB)
		return a != nil && b != nil && len(a.GetOwnerReferences()) == 2 && len(b.GetOwnerReferences()) == 1
	})
	for name, want := range map[string]int64{cdA: 2, cdB: 1} {
		if n, _, _ := unstructured.NestedInt64(getCD(name).Object, "spec", "numNodes"); n != want {
			t.Fatalf("%s: numNodes %d, want %d", name, n, want)
		}
	}
	prepared := func(name string) *corev1.PodCondition {
		p, err := local.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == v1alpha1.PodConditionPrepared {
				return &p.Status.Conditions[i]
			}
		}
		return nil
	}
	time.Sleep(200 * time.Millisecond) // a few retries of the prepare
	for _, name := range []string{"m0", "m1", "m2"} {
		if c := prepared(name); c != nil {
			t.Fatalf("%s reported %+v before its domain's channel template existed", name, c)
		}
	}
	for _, cd := range []string{cdA, cdB} { // what the domains' controller does
		rct := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ComputeDomainChannelTemplate(cd), Namespace: "ns"}}
		if _, err := local.ResourceV1().ResourceClaimTemplates("ns").Create(ctx, rct, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every member Prepared", func() bool {
		for _, name := range []string{"m0", "m1", "m2"} {
			if c := prepared(name); c == nil || c.Status != corev1.ConditionTrue {
				return false
			}
		}
		return true
	})
	for _, name := range []string{"m0", "m1", "m2"} {
		if err := g.Commit(ctx, hubOf(name, "3")); err != nil {
			t.Fatal(err)
		}
	}
	a := getCD(cdA)
	_ = unstructured.SetNestedField(a.Object, fedinv.ComputeDomainStatusReady, "status", "status")
	if _, err := domains.Resource(gvr).Namespace("ns").Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // a check before the bound: nothing stopped
	if got := stopped.get(); len(got) != 0 {
		t.Fatalf("stopped %v before the bound", got)
	}
	clock.SetTime(clock.Now().Add(2 * time.Minute))
	eventually(t, "m2 stopped", func() bool { return stopped.get()["m2"] == v1alpha1.ReasonComputeDomainNotReady })
	if got := stopped.get(); len(got) != 1 {
		t.Fatalf("stopped %v, want only m2 (clique B's domain never turned Ready)", got)
	}
}
