// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// The DRA profile's nodes carry no GPU resource and no GFD label; what the
// simulator publishes is what the inventory reads.
func TestDRAProfileInventory(t *testing.T) {
	p, err := LookupProfile("hgx-h100-dra")
	if err != nil {
		t.Fatal(err)
	}
	nodes := BuildNodes("h100dra-1", "eu", p, 3)
	for _, n := range nodes {
		if fedinv.IsGPUNode(n) || n.Labels[LabelGPUProduct] != "" {
			t.Fatalf("node %s has extended GPU resources or GFD labels: %v %v", n.Name, n.Status.Capacity, n.Labels)
		}
	}
	slices := BuildResourceSlices(nodes, p.DRA)
	if fedinv.Build("h100dra-1", nodes, nil, fedinv.DefaultLabelKeys()).Nodes != nil {
		t.Fatal("without its slices the DRA cluster must look empty")
	}
	c := fedinv.BuildDRA("h100dra-1", nodes, nil, fedinv.DefaultLabelKeys(),
		fedinv.DRA{Slices: slices, Classes: []*resourcev1.DeviceClass{DRADeviceClass()}})
	gpus := 0
	for _, n := range c.Nodes {
		gpus += n.GPUs
	}
	if len(c.Nodes) != 3 || gpus != 24 { // KWOK turns the nodes Ready, so none is free yet
		t.Fatalf("inventory = %+v, want 3 nodes, 24 GPUs", c)
	}
	n := c.Nodes[0]
	if n.Product != "NVIDIA-H100-80GB-HBM3" || n.MemoryMiB != 81559 || n.DRAClass != fedinv.DriverGPU || n.Rack == "" {
		t.Errorf("node = %+v", n)
	}
	uuids := map[string]bool{}
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			uuids[*d.Attributes[fedinv.DRAAttrUUID].StringValue] = true
		}
	}
	if len(uuids) != 24 {
		t.Errorf("%d distinct GPU UUIDs, want 24", len(uuids))
	}
}

// TestDRAMIGProfileInventory: the a100-mig-dra simulator publishes each
// node's 2 whole GPUs and the static MIG partitions of 6 more, named and
// attributed as NVIDIA's driver does; through the classes it installs the
// inventory reads the same shapes as the a100-mig profile's device plugin
// resources (2 GPUs, 28 x 1g.10gb, 4 x 3g.40gb per node).
func TestDRAMIGProfileInventory(t *testing.T) {
	p, err := LookupProfile("a100-mig-dra")
	if err != nil {
		t.Fatal(err)
	}
	plugin, _ := LookupProfile("a100-mig")
	nodes := BuildNodes("a100dra-1", "eu", p, 2)
	for _, n := range nodes {
		if fedinv.IsGPUNode(n) || n.Labels[LabelGPUProduct] != "" {
			t.Fatalf("node %s has extended GPU resources or GFD labels: %v %v", n.Name, n.Status.Capacity, n.Labels)
		}
	}
	slices := BuildResourceSlices(nodes, p.DRA)
	c := fedinv.BuildDRA("a100dra-1", nodes, nil, fedinv.DefaultLabelKeys(),
		fedinv.DRA{Slices: slices, Classes: DRADeviceClasses(p.DRA)})
	if len(c.Nodes) != 2 {
		t.Fatalf("inventory = %+v, want 2 nodes", c)
	}
	for _, n := range c.Nodes {
		if n.Product != "NVIDIA-A100-SXM4-80GB" || n.MemoryMiB != 81920 || n.GPUs != 2 || n.DRAClass != fedinv.DriverGPU {
			t.Errorf("node %s: product %q memory %d GPUs %d class %q", n.Name, n.Product, n.MemoryMiB, n.GPUs, n.DRAClass)
		}
		for _, r := range []string{ResourceMIG1g10gb, ResourceMIG3g40gb} {
			want := plugin.Resources[r]
			if got := fmt.Sprint(n.MIG[r].Allocatable); got != want || n.DRAMIGClasses[r] != DRAMIGDeviceClass(strings.TrimPrefix(r, fedinv.ResourceMIGPrefix)).Name {
				t.Errorf("node %s %s: %d allocatable behind %q, want %s as a100-mig", n.Name, r, n.MIG[r].Allocatable, n.DRAMIGClasses[r], want)
			}
		}
	}
	devs := map[string]resourcev1.Device{}
	uuids := map[string]bool{}
	for _, d := range slices[0].Spec.Devices {
		devs[d.Name] = d
		uuids[*d.Attributes[fedinv.DRAAttrUUID].StringValue] = true
	}
	if len(devs) != 34 || len(uuids) != 34 {
		t.Fatalf("%d devices, %d UUIDs on a node, want 34 (2 GPUs, 28 + 4 partitions)", len(devs), len(uuids))
	}
	for _, name := range []string{"gpu-0", "gpu-1", "gpu-2-mig-1g10gb-0", "gpu-5-mig-1g10gb-6", "gpu-6-mig-3g40gb-0-3", "gpu-7-mig-3g40gb-4-7"} {
		if _, ok := devs[name]; !ok {
			t.Errorf("no device %s", name)
		}
	}
	m := devs["gpu-7-mig-3g40gb-4-7"]
	slice7, mem := m.Capacity["memorySlice7"].Value, m.Capacity[fedinv.DRACapMemory].Value
	parent := gpuUUID(nodes[0].Name, 7)
	if *m.Attributes[fedinv.DRAAttrParentUUID].StringValue != parent || *m.Attributes[fedinv.DRAAttrProfile].StringValue != "3g.40gb" ||
		*m.Attributes[fedinv.DRAAttrProductName].StringValue != "NVIDIA A100-SXM4-80GB" || slice7.Value() != 1 ||
		mem.String() != "40192Mi" || len(m.ConsumesCounters) != 0 {
		t.Errorf("partition = %+v", m)
	}
}
