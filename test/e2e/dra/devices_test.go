// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// a100 is what the test's driver publishes on half the DRA cluster's nodes:
// GPUs of 40 GiB, which a request for at least 80 GB must not get.
var a100 = devfleet.DRADevices{PerNode: 8, ProductName: "NVIDIA A100-SXM4-40GB", Architecture: "Ampere",
	ComputeCapability: "8.0.0", DriverVersion: "580.65.6", CUDADriverVersion: "13.0.0", Memory: "40Gi"}

// republish replaces the GPU driver's slice of each node with one of the
// pool's next generation publishing d.
func republish(ctx context.Context, t *testing.T, ns []*corev1.Node, d *devfleet.DRADevices) {
	t.Helper()
	for _, want := range devfleet.BuildResourceSlices(ns, d) {
		s, err := draCS.ResourceV1().ResourceSlices().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Devices = want.Spec.Devices
		s.Spec.Pool.Generation++
		if _, err := draCS.ResourceV1().ResourceSlices().Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeviceRequestLandsOnlyOnMatchingDevices: half the DRA cluster's
// nodes publish A100 40GB GPUs, half H100 80GB. A job asking by device
// request (spec.gang.devices: class gpu.nvidia.com, memory of at least
// 80G) lands only on the H100 nodes, node-exactly, each member holding a
// ResourceClaim of its request allocated from its own node's devices; the
// extended-resource cluster, which has no DRA GPUs, is never a candidate.
// A request no node's GPUs match waits with the reason, and a selector
// that does not compile is refused at submit with its field path.
func TestDeviceRequestLandsOnlyOnMatchingDevices(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet")
	}
	ctx := t.Context()
	l, err := draCS.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ns []*corev1.Node
	for i := range l.Items {
		ns = append(ns, &l.Items[i])
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].Name < ns[j].Name })
	small, big := ns[:nodes/2], ns[nodes/2:]
	h100, err := devfleet.LookupProfile(profileDRA)
	if err != nil {
		t.Fatal(err)
	}
	republish(ctx, t, small, &a100)
	restored := false
	t.Cleanup(func() {
		if !restored {
			republish(context.Background(), t, small, h100.DRA)
		}
	})
	// The other tests of the package expect the fleet's H100s everywhere:
	// put them back, and wait until the hub's inventory shows them.
	defer func() {
		if t.Failed() {
			return
		}
		restored = true
		republish(ctx, t, small, h100.DRA)
		waitInventory(t, func(c *fedinv.Cluster) bool {
			for _, n := range c.Nodes {
				if n.Product != "NVIDIA-H100-80GB-HBM3" {
					return false
				}
			}
			return len(c.Nodes) == nodes
		})
	}()
	isBig := map[string]bool{}
	for _, n := range big {
		isBig[n.Name] = true
	}
	waitInventory(t, func(c *fedinv.Cluster) bool {
		a := 0
		for _, n := range c.Nodes {
			if n.Product == "NVIDIA-A100-SXM4-40GB" && n.DRADevices != nil && len(n.DRADevices.Classes) > 0 {
				a++
			}
		}
		return a == nodes/2 && c.FreeGPUs() == nodes*8 // and the other tests' gangs are gone
	})

	const memory80G = `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80G")) >= 0`
	manifest := func(name string, members, gpus int, selector string) string {
		return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: %s
spec:
  queue: dra
  gang:
    members: %d
    gpusPerMember: %d
    devices:
      deviceClassName: gpu.nvidia.com
      selectors:
      - cel:
          expression: '%s'
  template:
    spec:
      containers:
      - name: train
        image: busybox
`, name, members, gpus, selector)
	}

	out, err := shoalCLI(manifest("dev-bad", 1, 1, `device.attributes[`), "job", "submit", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.gang.devices.selectors[0].cel.expression") {
		t.Fatalf("a selector that does not compile: err %v, output %s; want a refusal naming the field", err, out)
	}

	const name = "dev-80g"
	submitJob(t, name, manifest(name, nodes/2, 8, memory80G))
	waitPhase(t, name, v1alpha1.JobRunning, 2*time.Minute)
	pods := waitRunningPods(t, name, nodes/2)
	for _, p := range pods {
		target := p.Annotations[v1alpha1.AnnotationTargetNode]
		if p.Spec.NodeName != target || !isBig[target] {
			t.Errorf("member %s on %q, planned for %q: want node-exact on an H100 node", p.Name, p.Spec.NodeName, target)
		}
		if n := fedinv.PodGPURequests(&p)[fedinv.ResourceGPU]; n != 0 {
			t.Errorf("member %s asks for %d nvidia.com/gpu besides its claim", p.Name, n)
		}
		c, err := draCS.ResourceV1().ResourceClaims(p.Namespace).Get(ctx, v1alpha1.MemberClaimName(p.Name), metav1.GetOptions{})
		if err != nil {
			t.Errorf("claim of %s: %v", p.Name, err)
			continue
		}
		if !metav1.IsControlledBy(c, &p) || c.Status.Allocation == nil {
			t.Errorf("claim %s: owners %+v, allocation %+v; want owned by the pod and allocated", c.Name, c.OwnerReferences, c.Status.Allocation)
			continue
		}
		r := c.Spec.Devices.Requests
		if len(r) != 1 || r[0].Exactly == nil || r[0].Exactly.Count != 8 || len(r[0].Exactly.Selectors) != 1 ||
			r[0].Exactly.Selectors[0].CEL.Expression != memory80G {
			t.Errorf("claim %s requests %+v, want the job's request", c.Name, r)
		}
		devs := map[string]bool{}
		for _, res := range c.Status.Allocation.Devices.Results {
			if res.Driver != fedinv.DriverGPU || res.Pool != p.Spec.NodeName {
				t.Errorf("member %s on %s got device %s/%s/%s", p.Name, p.Spec.NodeName, res.Driver, res.Pool, res.Device)
			}
			devs[res.Device] = true
		}
		if len(devs) != 8 {
			t.Errorf("member %s got %d devices, want 8", p.Name, len(devs))
		}
	}
	waitInventory(t, func(c *fedinv.Cluster) bool { return c.FreeGPUs() == nodes/2*8 })

	const none = "dev-100g"
	submitJob(t, none, manifest(none, 1, 1, `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("100G")) >= 0`))
	var msg string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		out, err := shoalCLI("", "job", "describe", none)
		msg = out
		return err == nil && strings.Contains(out, "device class and selectors"), nil
	})
	if err != nil {
		t.Fatalf("job %s, whose request no GPU matches: %v; describe:\n%s", none, err, msg)
	}
}
