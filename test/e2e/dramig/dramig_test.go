// SPDX-License-Identifier: Apache-2.0

package dramig

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/test/framework"
)

const (
	r1g = "nvidia.com/mig-1g.10gb"
	r3g = "nvidia.com/mig-3g.40gb"
)

// migFree returns the cluster's free slices of resource r.
func migFree(c *fedinv.Cluster, r string) int {
	free := 0
	for i := range c.Nodes {
		free += c.Nodes[i].FreeMIG(r)
	}
	return free
}

// TestMIGGangOnDRAOnlyCluster: the hub's inventory of the DRA-only
// cluster has the partitions as MIG shapes (28 x 1g.10gb and 4 x 3g.40gb
// per node, behind the simulator's classes) and a pool of A100 80GB
// 1g.10gb slices; a job of 6 members asking spec.gang.mig 1g.10gb, and one
// of 6 asking 3g.40gb (which needs both nodes), are placed node-exactly,
// each member's local pod asks for nvidia.com/mig-<profile> and the
// cluster's kube-scheduler gives it, through the mapping class, a claim of
// one partition of that profile on its own node; the inventory then counts
// those slices used, once.
func TestMIGGangOnDRAOnlyCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet")
	}
	const members = 6
	hub := fl.NewHubAPI(t)
	hub.EnsureQueue(t, "dramig")
	inv := hub.WaitInventory(t, migName, time.Minute, func(c *fedinv.Cluster) bool {
		return migFree(c, r1g) == nodes*28 && migFree(c, r3g) == nodes*4 && c.FreeGPUs() == nodes*2
	})
	for _, n := range inv.Nodes {
		if n.Product != "NVIDIA-A100-SXM4-80GB" || n.DRAMIG[r1g] != 28 || n.DRAMIGClasses[r1g] != "mig-1g.10gb.nvidia.com" {
			t.Errorf("node %s: product %q DRAMIG %v classes %v", n.Name, n.Product, n.DRAMIG, n.DRAMIGClasses)
		}
	}
	pools := map[string]fedinv.Pool{}
	for _, p := range inv.Pools() {
		pools[p.Resource] = p
	}
	if p := pools[r1g]; p.Name != "a100-80gb-mig-1g-10gb" || p.Product != "NVIDIA-A100-SXM4-80GB" || p.Capacity != nodes*28 {
		t.Errorf("1g.10gb pool = %+v, want a100-80gb-mig-1g-10gb of %d", p, nodes*28)
	}

	// 6 x 1g.10gb fit one node; 6 x 3g.40gb (4 a node) need both.
	nodes1g := runMIGGang(t, hub, "dra-mig-1g", "1g.10gb", members)
	nodes3g := runMIGGang(t, hub, "dra-mig-3g", "3g.40gb", members)
	if len(nodes3g) != 2 {
		t.Errorf("3g.40gb members on nodes %v, want both nodes", nodes3g)
	}
	t.Logf("1g.10gb members on %v, 3g.40gb members on %v", nodes1g, nodes3g)
	inv = hub.WaitInventory(t, migName, time.Minute, func(c *fedinv.Cluster) bool {
		return migFree(c, r1g) == nodes*28-members && migFree(c, r3g) == nodes*4-members && c.FreeGPUs() == nodes*2
	})
	used := map[string]int{}
	for _, n := range inv.Nodes {
		for r, m := range n.MIG {
			used[r] += m.Used
		}
	}
	if used[r1g] != members || used[r3g] != members {
		t.Errorf("slices used in the inventory %v, want %d of each (counted once: by the pods, not their claims)", used, members)
	}
}

// runMIGGang submits a job of members asking for one slice of profile
// each, waits until it runs and checks that every member runs on its
// planned node, asks for nvidia.com/mig-<profile>, and holds the
// kube-scheduler's extended-resource claim of one partition of that
// profile on its own node, no partition twice. It returns the members'
// nodes and how many members each runs.
func runMIGGang(t *testing.T, hub *framework.HubAPI, name, profile string, members int32) map[string]int {
	t.Helper()
	r := fedinv.ResourceMIGOf(profile)
	hub.Submit(t, &v1alpha1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.JobSpec{Queue: "dramig",
			Gang: v1alpha1.Gang{Members: members, MIG: &v1alpha1.MIGRequest{Profile: profile, PerMember: 1}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}},
	})
	hub.WaitJobPhase(t, name, v1alpha1.JobRunning, 2*time.Minute)
	pods := waitRunningPods(t, name, int(members))

	devices := map[[2]string]resourcev1.Device{} // pool (node), device name -> device
	slices, err := migCS.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slices.Items {
		for _, d := range s.Spec.Devices {
			devices[[2]string{s.Spec.Pool.Name, d.Name}] = d
		}
	}
	claims, err := migCS.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{})
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
	held := map[[2]string]bool{}
	on := map[string]int{}
	for _, p := range pods {
		target := p.Annotations[v1alpha1.AnnotationTargetNode]
		if target == "" || p.Spec.NodeName != target {
			t.Errorf("pod %s on %q, planned for %q: want node-exact", p.Name, p.Spec.NodeName, target)
		}
		on[p.Spec.NodeName]++
		if req := fedinv.PodGPURequests(&p); req[r] != 1 || len(req) != 1 {
			t.Errorf("pod %s asks for %v, want one %s", p.Name, req, r)
		}
		c := byPod[p.Name]
		if c == nil || c.Status.Allocation == nil {
			t.Errorf("pod %s has no allocated ResourceClaim", p.Name)
			continue
		}
		if c.Annotations[fedinv.DRAExtendedResourceClaimAnnotation] != "true" {
			t.Errorf("pod %s: claim %s is not the kube-scheduler's extended-resource claim", p.Name, c.Name)
		}
		res := c.Status.Allocation.Devices.Results
		if len(res) != 1 {
			t.Errorf("pod %s got %d devices, want 1", p.Name, len(res))
			continue
		}
		key := [2]string{res[0].Pool, res[0].Device}
		d, ok := devices[key]
		if res[0].Driver != fedinv.DriverGPU || res[0].Pool != p.Spec.NodeName || !ok ||
			attr(d, fedinv.DRAAttrType) != fedinv.DRATypeMIG || attr(d, fedinv.DRAAttrProfile) != profile {
			t.Errorf("pod %s on %s got device %s/%s/%s, want a %s partition of its node",
				p.Name, p.Spec.NodeName, res[0].Driver, res[0].Pool, res[0].Device, profile)
		}
		if held[key] {
			t.Errorf("device %v held twice", key)
		}
		held[key] = true
		t.Logf("member %s on %s holds %s (claim %s)", p.Name, p.Spec.NodeName, res[0].Device, c.Name)
	}
	return on
}

func attr(d resourcev1.Device, name string) string {
	if a, ok := d.Attributes[resourcev1.QualifiedName(name)]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

// waitRunningPods waits until the job has n local pods Running and returns them.
func waitRunningPods(t *testing.T, job string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), framework.PollInterval, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := migCS.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
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
