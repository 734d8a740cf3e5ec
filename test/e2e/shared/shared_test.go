// SPDX-License-Identifier: Apache-2.0

package shared

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/framework"
)

const queue = "shared"

// job returns a job of the given gang on queue, running busybox.
func job(name string, gang v1alpha1.Gang) *v1alpha1.Job {
	return &v1alpha1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.JobSpec{Queue: queue, Gang: gang, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
		}}},
	}
}

// TestSharedMembersPackOntoSharedGPUsInUse: a member of 16 shares fills
// a node X, the next shared member opens another node Y; X is freed again.
// Single-member shared jobs, submitted one after another, then fill Y,
// whose shares are in use, up to its 16 shares before any untouched node
// (X included, however the nodes are named), and the two after open one
// more node and pack onto it. Each runs node-exactly where the hub planned
// it, its local pod asks for nvidia.com/gpu.shared and no whole GPU, and
// the hub's inventory counts the shares used per node.
func TestSharedMembersPackOntoSharedGPUsInUse(t *testing.T) {
	hub, inv := start(t)
	if len(inv.Nodes) != nodes {
		t.Fatalf("%d nodes in the inventory of %s, want %d", len(inv.Nodes), sharedName, nodes)
	}
	used := map[string]int{}
	run := func(name string, per int) string {
		t.Helper()
		want := packTargets(inv, used, per)
		hub.Submit(t, job(name, v1alpha1.Gang{Members: 1, Shared: &v1alpha1.SharedGPURequest{PerMember: int32(per)}}))
		j := hub.WaitJobPhase(t, name, v1alpha1.JobRunning, time.Minute)
		if len(j.Status.Members) != 1 || j.Status.Members[0].Cluster != sharedName {
			t.Fatalf("job %s members %+v, want one on %s", name, j.Status.Members, sharedName)
		}
		pod := waitLocalPod(t, sharedCS, name)
		node := pod.Spec.NodeName
		if target := pod.Annotations[v1alpha1.AnnotationTargetNode]; target != node {
			t.Errorf("job %s: pod %s on %s, planned for %q: want node-exact", name, pod.Name, node, target)
		}
		if !want[node] {
			t.Errorf("job %s (%d shares) on %s with shares in use %v: want one of %v", name, per, node, used, want)
		}
		checkSharedRequest(t, pod, per)
		used[node] += per
		return node
	}
	x := run("shared-fill", sharesPerNode)
	y := run("shared-0", 1)
	if y == x {
		t.Fatalf("shared-0 on %s, which shared-fill filled", x)
	}
	if _, err := hub.Jobs.Cancel(t.Context(), &shoalv1.CancelJobRequest{Name: "shared-fill"}); err != nil {
		t.Fatal(err)
	}
	used[x] = 0
	hub.WaitInventory(t, sharedName, time.Minute, func(c *fedinv.Cluster) bool { return sharedFree(c) == nodes*sharesPerNode-1 })
	// 1+1+2+4+4+4 = 16 fills y; the last two open a third node or x.
	order := []string{y}
	for i, per := range []int{1, 2, 4, 4, 4, 1, 1} {
		order = append(order, run(fmt.Sprintf("shared-%d", i+1), per))
	}
	t.Logf("shared-fill on %s, then shared-0... on %v", x, order)
	for i, n := range order[:6] {
		if n != y {
			t.Errorf("job shared-%d on %s, want %s (the node already shared) until its %d shares are used", i, n, y, sharesPerNode)
		}
	}
	if order[6] == y || order[7] != order[6] {
		t.Errorf("jobs shared-6, shared-7 on %s, %s: want both on one node other than the full %s", order[6], order[7], y)
	}
	hub.WaitInventory(t, sharedName, time.Minute, func(c *fedinv.Cluster) bool {
		for _, n := range c.Nodes {
			if n.Shared == nil || n.Shared.Used != used[n.Name] || n.Shared.Allocatable != sharesPerNode {
				return false
			}
		}
		return sharedFree(c) == nodes*sharesPerNode-16-2
	})
}

// TestWholeGPUGangsDoNotTakeShares: a whole-GPU gang runs on the hgx-h100
// cluster only, and a whole-GPU gang asking for the L4s, which are all
// time-sliced, is not placed: whole GPUs and shares are apart.
func TestWholeGPUGangsDoNotTakeShares(t *testing.T) {
	hub, before := start(t)
	l4 := job("whole-l4", v1alpha1.Gang{Members: 1, GPUsPerMember: 1})
	l4.Spec.Placement.GPUProducts = []string{"NVIDIA-L4"}
	hub.Submit(t, l4)
	hub.Submit(t, job("whole-gang", v1alpha1.Gang{Members: 2, GPUsPerMember: 8}))
	j := hub.WaitJobPhase(t, "whole-gang", v1alpha1.JobRunning, time.Minute)
	for _, m := range j.Status.Members {
		if m.Cluster != wholeName {
			t.Errorf("whole-GPU member %d on %s/%s, want cluster %s", m.Index, m.Cluster, m.Node, wholeName)
		}
	}
	hub.WaitInventory(t, wholeName, time.Minute, func(c *fedinv.Cluster) bool { return c.FreeGPUs() == nodes*8-16 })
	// The L4 gang waits, with the scheduler's reason.
	var l4Job *v1alpha1.Job
	err := wait.PollUntilContextTimeout(t.Context(), framework.PollInterval, time.Minute, true, func(ctx context.Context) (bool, error) {
		cur, err := hub.GetJob(ctx, l4.Name)
		if err != nil {
			return false, nil
		}
		l4Job = cur
		return cur.Status.Phase != v1alpha1.JobPending || cur.Status.Placement != nil && cur.Status.Placement.Explanation != "", nil
	})
	if err != nil || l4Job.Status.Phase != v1alpha1.JobPending {
		t.Errorf("job %s asking for whole L4 GPUs: %+v, %v; want Pending with the scheduler's reason", l4.Name, l4Job, err)
	} else {
		t.Logf("%s waits: %s", l4.Name, l4Job.Status.Placement.Explanation)
	}
	after, err := hub.Inventory(t.Context(), sharedName)
	if err != nil {
		t.Fatal(err)
	}
	if after.FreeGPUs() != 0 || sharedFree(after) != sharedFree(before) {
		t.Errorf("%s: %d whole GPUs, %d free shares (before %d): want 0 whole GPUs and the shares untouched",
			sharedName, after.FreeGPUs(), sharedFree(after), sharedFree(before))
	}
}

// start skips the test under -short; otherwise it dials the hub, creates
// the queue and waits until no share of the l4-shared cluster is in use
// (the other test's jobs are cancelled when it ends), returning its inventory.
func start(t *testing.T) (*framework.HubAPI, *fedinv.Cluster) {
	t.Helper()
	if testing.Short() {
		t.Skip("fleet")
	}
	hub := fl.NewHubAPI(t)
	hub.EnsureQueue(t, queue)
	return hub, hub.WaitInventory(t, sharedName, time.Minute, func(c *fedinv.Cluster) bool { return sharedFree(c) == nodes*sharesPerNode })
}

// sharedFree returns the cluster's free requestable shares.
func sharedFree(c *fedinv.Cluster) int {
	free := 0
	for i := range c.Nodes {
		free += c.Nodes[i].FreeShared()
	}
	return free
}

// packTargets returns the nodes the packing rule allows for a member of
// per shares, given the shares in use: of the nodes with per free, those
// with the most in use (all nodes have the same shares, so the fewest free
// is the same).
func packTargets(inv *fedinv.Cluster, used map[string]int, per int) map[string]bool {
	best, out := -1, map[string]bool{}
	for _, n := range inv.Nodes {
		u := used[n.Name]
		switch {
		case sharesPerNode-u < per || u < best:
		case u > best:
			best, out = u, map[string]bool{n.Name: true}
		default:
			out[n.Name] = true
		}
	}
	return out
}

// waitLocalPod waits until the job's one local pod in the cluster runs and returns it.
func waitLocalPod(t *testing.T, cs kubernetes.Interface, job string) *corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), framework.PollInterval, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
		if err != nil {
			return false, nil
		}
		pods = l.Items
		return len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("local pods of %s: %+v, want one Running: %v", job, pods, err)
	}
	return &pods[0]
}

// checkSharedRequest checks that the pod asks for per shares and no whole GPU.
func checkSharedRequest(t *testing.T, pod *corev1.Pod, per int) {
	t.Helper()
	var shares, whole int64
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[fedinv.ResourceGPUShared]; ok {
			shares += q.Value()
		}
		if q, ok := c.Resources.Limits[fedinv.ResourceGPU]; ok {
			whole += q.Value()
		}
	}
	if shares != int64(per) || whole != 0 {
		t.Errorf("pod %s asks for %d %s and %d %s, want %d and none", pod.Name, shares, fedinv.ResourceGPUShared,
			whole, fedinv.ResourceGPU, per)
	}
}
