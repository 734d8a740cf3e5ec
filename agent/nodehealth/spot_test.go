// SPDX-License-Identifier: Apache-2.0

package nodehealth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/agent/nodehealth"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testnode"
)

// TestSpotReclaimedByTaintOrLabel: a named taint key, a named label key
// (any value) or key=value (that value only) mark a node to go; others do
// not.
func TestSpotReclaimedByTaintOrLabel(t *testing.T) {
	s := nodehealth.Spot{Taints: []string{"example.com/spot-itn"}, Labels: []string{"example.com/draining", "example.com/state=terminating"}}
	for name, tc := range map[string]struct {
		change func(n *corev1.Node)
		want   bool
	}{
		"nothing": {func(*corev1.Node) {}, false},
		"named taint": {func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "example.com/spot-itn", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		"other taint": {func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "example.com/other", Effect: corev1.TaintEffectNoSchedule}}
		}, false},
		"label key":       {func(n *corev1.Node) { n.Labels["example.com/draining"] = "" }, true},
		"label value":     {func(n *corev1.Node) { n.Labels["example.com/state"] = "terminating" }, true},
		"other value":     {func(n *corev1.Node) { n.Labels["example.com/state"] = "running" }, false},
		"label elsewhere": {func(n *corev1.Node) { n.Labels["example.com/x"] = "terminating" }, false},
	} {
		t.Run(name, func(t *testing.T) {
			n := testnode.New("n1").GPUs(8).Obj()
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			tc.change(n)
			msg, got := s.Reclaimed(n)
			if got != tc.want || got && !strings.Contains(msg, "n1") {
				t.Fatalf("Reclaimed = %v %q, want %v", got, msg, tc.want)
			}
		})
	}
}

// TestSpotTaintMarksMembersReclaimedAtOnce: the named taint on a member's
// node sets the NodeReclaimed condition on its local pods at once (no
// grace), and stops nothing: the hub moves the gang with its grace.
func TestSpotTaintMarksMembersReclaimedAtOnce(t *testing.T) {
	f := start(t, nodehealth.Config{Spot: nodehealth.Spot{Taints: []string{"example.com/spot-itn"}}}, member("m0", 8), member("cpu", 0))
	f.node(t, func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/spot-itn", Effect: corev1.TaintEffectNoSchedule})
	})
	for _, name := range []string{"m0", "cpu"} {
		var c *corev1.PodCondition
		for deadline := time.Now().Add(5 * time.Second); c == nil; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("member %s not marked NodeReclaimed", name)
			}
			p, err := f.cs.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == v1alpha1.PodConditionNodeReclaimed {
					c = &p.Status.Conditions[i]
				}
			}
		}
		if c.Status != corev1.ConditionTrue || c.Reason != v1alpha1.ReasonNodeReclaimed || !strings.Contains(c.Message, "spot taint example.com/spot-itn") {
			t.Fatalf("member %s condition %+v", name, c)
		}
	}
	f.none(t, "after the spot taint")
}
