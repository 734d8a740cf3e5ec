// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// clusterExpr sets a cluster selector of one expression over labelCluster.
func clusterExpr(op metav1.LabelSelectorOperator, values ...string) func(*v1alpha1.Job) {
	return func(j *v1alpha1.Job) {
		j.Spec.Placement.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: labelCluster, Operator: op, Values: values}}}
	}
}

// TestClusterSelectorNotIn: a gang too big for one cluster, allowed two,
// with one cluster excluded by NotIn runs on exactly the other two and has
// no member, hub or local, on the excluded one.
func TestClusterSelectorNotIn(t *testing.T) {
	skipShort(t)
	excluded := clusterNames[1]
	submit(t, newJob("not-in", "e2e", 17, 8, clusterExpr(metav1.LabelSelectorOpNotIn, excluded),
		func(j *v1alpha1.Job) { j.Spec.Placement.MaxClusters = 2 }))
	j := waitPhase(t, "not-in", v1alpha1.JobRunning, time.Minute)
	want := []string{clusterNames[0], clusterNames[2]}
	slices.Sort(want)
	got := slices.Clone(j.Status.Clusters())
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("clusters %v, want %v (not %s)", got, want, excluded)
	}
	local, err := localPods(t.Context(), "not-in")
	if err != nil {
		t.Fatal(err)
	}
	if len(local[excluded]) != 0 {
		t.Fatalf("%d local pods on excluded cluster %s", len(local[excluded]), excluded)
	}
}

// TestClusterSelectorMatchesNone: a selector no cluster matches
// (DoesNotExist of a label every cluster has) keeps the job Pending with
// its reason, and no member is created anywhere.
func TestClusterSelectorMatchesNone(t *testing.T) {
	skipShort(t)
	submit(t, newJob("matches-none", "e2e", 1, 8, clusterExpr(metav1.LabelSelectorOpDoesNotExist)))
	eventually(t, 30*time.Second, "explanation", func(ctx context.Context) (bool, error) {
		j := getJob(t, "matches-none")
		c := condition(j, v1alpha1.JobConditionPlaced)
		return j.Status.Phase == v1alpha1.JobPending && c != nil && c.Reason != "",
			fmt.Errorf("phase %s condition %+v", j.Status.Phase, c)
	})
	t.Logf("waits: %s", condition(getJob(t, "matches-none"), v1alpha1.JobConditionPlaced).Message)
	// Several scheduler cycles later still nothing is placed or created.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if j := getJob(t, "matches-none"); j.Status.Phase != v1alpha1.JobPending || len(j.Status.Members) != 0 {
			t.Fatalf("phase %s members %+v, want Pending with none", j.Status.Phase, j.Status.Members)
		}
		hp, err := hubPods(t.Context(), "matches-none")
		if err != nil || len(hp) != 0 {
			t.Fatalf("%d hub pods (%v), want none", len(hp), err)
		}
	}
}

// TestNamesThatBreakLaterRefused: names whose Service, host or pod names
// would be invalid are refused at submit with the field path.
func TestNamesThatBreakLaterRefused(t *testing.T) {
	skipShort(t)
	ensureQueue(t, "e2e")
	for _, name := range []string{strings.Repeat("a", 63), "a" + strings.Repeat("b", v1alpha1.MaxJobNameLength), "7b-llama"} {
		_, _, _, err := h.jobs.Submit(t.Context(), newJob(name, "e2e", 1, 8), false)
		var inv *v1alpha1.InvalidError
		if !errors.As(err, &inv) || inv.Errs[0].Field != "metadata.name" {
			t.Errorf("submit %q: %v, want an InvalidError on metadata.name", name, err)
		}
	}
}
