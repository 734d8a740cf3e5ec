// SPDX-License-Identifier: Apache-2.0

package gang_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/agent/cluster"
	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testpod"
)

// localMember is the running local pod of member name of job llama at epoch.
func localMember(name, epoch string) *corev1.Pod {
	return testpod.New(name).Namespace("ns").Node("n1").Phase(corev1.PodRunning).GPUs(8).
		Label(v1alpha1.LabelJob, "llama").Label(v1alpha1.LabelManaged, "true").
		Annotation(v1alpha1.AnnotationEpoch, epoch).Obj()
}

// restartedGate is a Gate of a fresh agent run on cs, loaded, with its
// record in shoal-system.
func restartedGate(t *testing.T, cs *fake.Clientset) *gang.Gate {
	t.Helper()
	c, err := cluster.New(cs)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Run(t.Context()) }()
	g := gang.New(c, gang.WithRecord("shoal-system"))
	if err := g.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRestartedGateRefusesStaleEpoch: a gate restarted on a cluster with a
// member of epoch 5 refuses epoch 4, both from the local pod and, once the
// pods are gone, from the record written when epoch 5 was prepared.
func TestRestartedGateRefusesStaleEpoch(t *testing.T) {
	ctx := context.Background()
	t.Run("from the local pods", func(t *testing.T) {
		g := restartedGate(t, fake.NewClientset(gpuNode(), localMember("llama-e5-0", "5")))
		err := g.Mutate(hubPod("llama-e4-0", "4", ""), hubPod("llama-e4-0", "4", ""))
		if !errors.Is(err, gang.ErrStaleEpoch) {
			t.Fatalf("epoch 4 after a restart on epoch 5: err %v, want ErrStaleEpoch", err)
		}
		if err := g.Mutate(hubPod("llama-e6-0", "6", ""), hubPod("llama-e6-0", "6", "")); err != nil {
			t.Fatalf("epoch 6: %v", err)
		}
	})
	t.Run("from the record once the pods are gone", func(t *testing.T) {
		cs := fake.NewClientset(gpuNode())
		first := restartedGate(t, cs)
		hub := hubPod("llama-e5-0", "5", "")
		lp := hub.DeepCopy()
		if err := first.Mutate(hub, lp); err != nil {
			t.Fatal(err)
		}
		lp, err := cs.CoreV1().Pods("ns").Create(ctx, lp, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Prepare(ctx, lp); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Pods("ns").Delete(ctx, lp.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		cm, err := cs.CoreV1().ConfigMaps("shoal-system").Get(ctx, gang.EpochsConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("no epoch record: %v", err)
		}
		t.Logf("record: %v", cm.Data)
		second := restartedGate(t, cs)
		err = second.Mutate(hubPod("llama-e4-0", "4", ""), hubPod("llama-e4-0", "4", ""))
		if !errors.Is(err, gang.ErrStaleEpoch) {
			t.Fatalf("epoch 4 after a restart without pods: err %v, want ErrStaleEpoch", err)
		}
	})
	t.Run("not loaded: members wait", func(t *testing.T) {
		c, err := cluster.New(fake.NewClientset())
		if err != nil {
			t.Fatal(err)
		}
		g := gang.New(c)
		if err := g.Mutate(hubPod("a", "1", ""), hubPod("a", "1", "")); !errors.Is(err, gang.ErrNotLoaded) {
			t.Fatalf("Mutate before Load: %v, want ErrNotLoaded", err)
		}
	})
}

// stops records what the Gate asks its Stopper.
type stops struct{ got chan [2]string }

func (s stops) Fail(_ context.Context, ns, name, reason, _ string, _ *int64) error {
	s.got <- [2]string{ns + "/" + name, reason}
	return nil
}

// TestStaleMembersRemoved: when a hub pod of a newer epoch arrives (a cut
// healed), the local members of older epochs are stopped at once, as are
// those found stale when the gate loads; current ones are left.
func TestStaleMembersRemoved(t *testing.T) {
	for name, tc := range map[string]struct {
		objs  []runtime.Object
		newer *corev1.Pod // the hub pod that arrives, if any
		want  string
	}{
		"a newer hub pod arrives": {objs: []runtime.Object{localMember("llama-e5-0", "5")},
			newer: hubPod("llama-e6-0", "6", ""), want: "ns/llama-e5-0"},
		"found stale at load": {objs: []runtime.Object{localMember("llama-e5-0", "5"), localMember("llama-e6-1", "6")},
			want: "ns/llama-e5-0"},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(append([]runtime.Object{gpuNode()}, tc.objs...)...)
			c, err := cluster.New(cs)
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = c.Run(t.Context()) }()
			g := gang.New(c)
			s := stops{got: make(chan [2]string, 4)}
			g.SetStopper(s)
			go func() { _ = g.Run(t.Context()) }()
			select {
			case <-g.Loaded():
			case <-time.After(5 * time.Second):
				t.Fatal("not loaded")
			}
			if tc.newer != nil {
				if err := g.Mutate(tc.newer, tc.newer.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case got := <-s.got:
				if got != [2]string{tc.want, v1alpha1.ReasonStaleEpoch} {
					t.Fatalf("stopped %v, want %s for %s", got, tc.want, v1alpha1.ReasonStaleEpoch)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s not stopped", tc.want)
			}
			select {
			case got := <-s.got:
				t.Fatalf("also stopped %v", got)
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}

// TestDefaultStopperDeletes: without a pod syncer the stale pod is deleted.
func TestDefaultStopperDeletes(t *testing.T) {
	cs := fake.NewClientset(gpuNode(), localMember("llama-e5-0", "5"), localMember("llama-e6-0", "6"))
	c, err := cluster.New(cs)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Run(t.Context()) }()
	g := gang.New(c)
	go func() { _ = g.Run(t.Context()) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := cs.CoreV1().Pods("ns").Get(t.Context(), "llama-e5-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("stale pod not deleted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := cs.CoreV1().Pods("ns").Get(t.Context(), "llama-e6-0", metav1.GetOptions{}); err != nil {
		t.Fatalf("current member: %v", err)
	}
}
