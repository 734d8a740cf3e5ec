// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end on a local fleet")
	}
}

// TestGangWithinOneRack: a gang with required topology rack lands in one
// rack of one cluster, every member Running behind the local kube-scheduler.
func TestGangWithinOneRack(t *testing.T) {
	skipShort(t)
	submit(t, newJob("rack-gang", "e2e", 4, 8, func(j *v1alpha1.Job) {
		j.Spec.Placement.Topology.Required = v1alpha1.TopologyRack
	}))
	j := waitPhase(t, "rack-gang", v1alpha1.JobRunning, time.Minute)
	if len(j.Status.Members) != 4 || len(j.Status.Clusters()) != 1 {
		t.Fatalf("members %+v", j.Status.Members)
	}
	local, err := localPods(t.Context(), "rack-gang")
	if err != nil {
		t.Fatal(err)
	}
	cluster := j.Status.Members[0].Cluster
	racks := map[string]bool{}
	for _, p := range local[cluster] {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
			t.Fatalf("local pod %s: phase %s node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		n, err := workloads[cluster].CoreV1().Nodes().Get(t.Context(), p.Spec.NodeName, metaGet)
		if err != nil {
			t.Fatal(err)
		}
		racks[n.Labels[devfleet.LabelRack]] = true
	}
	if len(local[cluster]) != 4 || len(racks) != 1 {
		t.Fatalf("%d local pods in %s over racks %v", len(local[cluster]), cluster, racks)
	}
}

// TestGangSplitAcrossTwoClusters: 32×8 GPUs is two clusters' worth.
func TestGangSplitAcrossTwoClusters(t *testing.T) {
	skipShort(t)
	submit(t, newJob("two-cluster", "e2e", 20, 8, func(j *v1alpha1.Job) { j.Spec.Placement.MaxClusters = 2 }))
	j := waitPhase(t, "two-cluster", v1alpha1.JobRunning, time.Minute)
	if cs := j.Status.Clusters(); len(cs) != 2 {
		t.Fatalf("clusters %v, want 2", cs)
	}
	local, err := localPods(t.Context(), "two-cluster")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ps := range local {
		n += len(ps)
	}
	if len(local) != 2 || n != 20 {
		t.Fatalf("local pods in %d clusters, %d in all", len(local), n)
	}
}

// TestTooLargeWaitsWithReason: more GPUs than one cluster has, maxClusters 1.
func TestTooLargeWaitsWithReason(t *testing.T) {
	skipShort(t)
	submit(t, newJob("too-large", "e2e", 17, 8))
	eventually(t, 30*time.Second, "explanation", func(ctx context.Context) (bool, error) {
		j := getJob(t, "too-large")
		c := condition(j, v1alpha1.JobConditionPlaced)
		return j.Status.Phase == v1alpha1.JobPending && c != nil && c.Reason != "" && c.Message != "",
			fmt.Errorf("phase %s condition %+v", j.Status.Phase, c)
	})
	t.Logf("waits: %s", condition(getJob(t, "too-large"), v1alpha1.JobConditionPlaced).Message)
}
