// SPDX-License-Identifier: Apache-2.0

package scheduler_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

func selector(exprs ...metav1.LabelSelectorRequirement) func(*v1alpha1.Job) {
	return func(j *v1alpha1.Job) {
		j.Spec.Placement.ClusterSelector = &metav1.LabelSelector{MatchExpressions: exprs}
	}
}

// TestClusterSelectorExpressions: each operator picks the cluster it
// selects, a job whose selector leaves only full clusters waits although
// excluded ones have room, and the booked reservation keeps the whole
// selector.
func TestClusterSelectorExpressions(t *testing.T) {
	region := func(op metav1.LabelSelectorOperator, v ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: "region", Operator: op, Values: v}
	}
	spot := func(op metav1.LabelSelectorOperator) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: "spot", Operator: op}
	}
	for name, tc := range map[string]struct {
		sel  metav1.LabelSelectorRequirement
		want string // "" waits
	}{
		"In picks the named region":      {sel: region(metav1.LabelSelectorOpIn, "us"), want: "us1"},
		"In a full region waits":         {sel: region(metav1.LabelSelectorOpIn, "ap")},
		"NotIn leaves the other":         {sel: region(metav1.LabelSelectorOpNotIn, "eu"), want: "us1"},
		"NotIn excludes every free room": {sel: region(metav1.LabelSelectorOpNotIn, "eu", "us")},
		"Exists needs the label":         {sel: spot(metav1.LabelSelectorOpExists), want: "eu1"},
		"DoesNotExist excludes labelled": {sel: spot(metav1.LabelSelectorOpDoesNotExist), want: "us1"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.ClusterLabels = map[string]string{"region": "eu", "spot": "true"}
			e.Cluster("eu1", node("a", "r", 0))
			e.ClusterLabels = map[string]string{"region": "us"}
			e.Cluster("us1", node("b", "r", 0))
			e.ClusterLabels = map[string]string{"region": "ap"}
			e.Cluster("ap1", node("c", "r", 8)) // full
			e.Submit("job", 1, 8, selector(tc.sel))
			res, err := scheduler.New(e.Store, scheduler.Config{Clock: e.Clock}).Cycle(e.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(res.Placed) != 0 {
					t.Fatalf("placed %v on %v, want it waiting", res.Placed, e.Job("job").Status.Placement)
				}
				return
			}
			if len(res.Placed) != 1 {
				t.Fatalf("placed %v, want [job]", res.Placed)
			}
			if cs := e.Job("job").Status.Placement.Clusters; len(cs) != 1 || cs[0] != tc.want {
				t.Fatalf("clusters %v, want [%s]", cs, tc.want)
			}
			r, _, err := ledger.New(e.Store).Get(e.Ctx, "job")
			if err != nil {
				t.Fatal(err)
			}
			if g := r.PlacementGang(); g.ClusterSelector == nil || len(g.ClusterSelector.MatchExpressions) != 1 ||
				g.ClusterSelector.MatchExpressions[0].Operator != tc.sel.Operator {
				t.Fatalf("reservation selector %+v, want the job's", g.ClusterSelector)
			}
		})
	}
}

func TestGangOfKeepsWholeSelector(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"eu"}}}}
	j := testjob.New("a").Members(1).GPUs(8).With(func(j *v1alpha1.Job) { j.Spec.Placement.ClusterSelector = sel }).Obj()
	g := scheduler.GangOf(j)
	if g.ClusterSelector == sel {
		t.Error("GangOf shares the job's selector; it must copy it")
	}
	if g.ClusterSelector.String() != sel.String() {
		t.Errorf("selector = %v, want %v", g.ClusterSelector, sel)
	}
	if scheduler.GangOf(testjob.New("b").Obj()).ClusterSelector != nil {
		t.Error("a job without a selector got one")
	}
}
