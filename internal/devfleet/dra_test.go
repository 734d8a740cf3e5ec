// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
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
