// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// TestDRAOnlyClusterInventory: the cluster has no nvidia.com/gpu anywhere,
// yet its inventory on the hub has every GPU of its ResourceSlices, with
// the product and memory the driver's attributes and capacities give.
func TestDRAOnlyClusterInventory(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet")
	}
	ns, err := draCS.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		if fedinv.IsGPUNode(&n) {
			t.Fatalf("node %s has extended GPU resources: %v", n.Name, n.Status.Allocatable)
		}
	}
	inv := waitInventory(t, func(c *fedinv.Cluster) bool { return c.FreeGPUs() == nodes*8 })
	if len(inv.Nodes) != nodes {
		t.Fatalf("%d nodes in the inventory, want %d", len(inv.Nodes), nodes)
	}
	for _, n := range inv.Nodes {
		if n.Product != "NVIDIA-H100-80GB-HBM3" || n.MemoryMiB != 81559 || n.DRAGPUs != 8 || n.GPUs != 8 ||
			n.DRAClass != fedinv.DriverGPU || n.Rack == "" {
			t.Errorf("node %+v: want product NVIDIA-H100-80GB-HBM3, 81559 MiB, 8 DRA GPUs behind %s, a rack", n, fedinv.DriverGPU)
		}
	}
	if p := inv.Pools(); len(p) != 1 || p[0].Name != "h100-80gb" || p[0].Capacity != nodes*8 {
		t.Errorf("pools = %+v, want one h100-80gb pool of %d", p, nodes*8)
	}
}

// TestGangOnDRAOnlyCluster: a gang of 4 x 8 GPUs asking for the product
// the driver's productName attribute gives is placed node-exactly on the
// DRA-only cluster; the cluster's kube-scheduler gives each member the
// 8 devices of its planned node (a ResourceClaim allocated from the node's
// slice), KWOK runs them, and the inventory counts those GPUs used.
func TestGangOnDRAOnlyCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet")
	}
	const name = "dra-gang"
	submitJob(t, name, fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: %s
spec:
  queue: dra
  gang: {members: %d, gpusPerMember: 8}
  placement:
    gpuProducts: [NVIDIA-H100-80GB-HBM3]
    clusterSelector: {matchLabels: {profile: %s}}
  template:
    spec:
      containers:
      - name: train
        image: busybox
`, name, nodes, profileDRA))
	waitPhase(t, name, v1alpha1.JobRunning, 2*time.Minute)
	pods := waitRunningPods(t, name, nodes)
	claims, err := draCS.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byPod := map[string]*resourcev1.ResourceClaim{}
	for i := range claims.Items {
		c := &claims.Items[i]
		for _, r := range c.Status.ReservedFor {
			byPod[r.Name] = c
		}
	}
	seen := map[string]bool{}
	for _, p := range pods {
		target := p.Annotations[v1alpha1.AnnotationTargetNode]
		if target == "" || p.Spec.NodeName != target {
			t.Errorf("pod %s on %q, planned for %q: want node-exact", p.Name, p.Spec.NodeName, target)
		}
		if seen[p.Spec.NodeName] {
			t.Errorf("two members on node %s", p.Spec.NodeName)
		}
		seen[p.Spec.NodeName] = true
		c := byPod[p.Name]
		if c == nil || c.Status.Allocation == nil {
			t.Errorf("pod %s has no allocated ResourceClaim", p.Name)
			continue
		}
		devs := map[string]bool{}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != fedinv.DriverGPU || r.Pool != p.Spec.NodeName {
				t.Errorf("pod %s on %s got device %s/%s/%s", p.Name, p.Spec.NodeName, r.Driver, r.Pool, r.Device)
			}
			devs[r.Device] = true
		}
		if len(devs) != 8 {
			t.Errorf("pod %s got %d devices, want 8", p.Name, len(devs))
		}
	}
	waitInventory(t, func(c *fedinv.Cluster) bool { return c.FreeGPUs() == 0 })
}

// waitRunningPods waits until the job has n local pods Running in the DRA
// cluster and returns its local pods.
func waitRunningPods(t *testing.T, job string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := draCS.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
		if err != nil {
			return false, nil
		}
		pods = l.Items
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n, nil
	})
	if err != nil {
		t.Fatalf("local pods of %s: %d, want %d Running: %+v", job, len(pods), n, pods)
	}
	return pods
}

// waitInventory waits until the DRA cluster's inventory on the hub satisfies ok.
func waitInventory(t *testing.T, ok func(*fedinv.Cluster) bool) *fedinv.Cluster {
	t.Helper()
	return fl.NewHubAPI(t).WaitInventory(t, draName, time.Minute, ok)
}

// shoalCLI runs the shoal CLI against the fleet's hub with stdin.
func shoalCLI(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bins, "shoal"), append([]string{"--config", fl.Shoal.Config}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// submitJob creates the queue dra if needed, submits the manifest and
// cancels the job when the test ends.
func submitJob(t *testing.T, name, manifest string) {
	t.Helper()
	if out, err := shoalCLI("", "queue", "create", "dra"); err != nil && !strings.Contains(out, "already exists") {
		t.Fatalf("shoal queue create: %v\n%s", err, out)
	}
	if out, err := shoalCLI(manifest, "job", "submit", "-f", "-"); err != nil {
		t.Fatalf("shoal job submit: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = shoalCLI("", "job", "cancel", name) })
}

// waitPhase waits until the job reaches phase, through `shoal job get -o json`.
func waitPhase(t *testing.T, name string, phase v1alpha1.JobPhase, timeout time.Duration) {
	t.Helper()
	var j v1alpha1.Job
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		out, err := shoalCLI("", "job", "get", name, "-o", "json")
		if err != nil {
			return false, nil
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			return false, nil
		}
		return j.Status.Phase == phase, nil
	})
	if err != nil {
		t.Fatalf("job %s did not reach %s: %v; status %+v", name, phase, err, j.Status)
	}
}
