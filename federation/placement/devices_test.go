// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// productMatcher stands in for federation/devicesel (which placement does
// not import): it accepts DRA GPUs of one class and product attribute.
type productMatcher struct{ class, product string }

func (m productMatcher) Matches(d *inventory.DRADevices) bool {
	if d == nil {
		return false
	}
	a, ok := d.Attributes["productName"]
	hasClass := false
	for _, c := range d.Classes {
		hasClass = hasClass || c == m.class
	}
	return hasClass && ok && a.StringValue != nil && *a.StringValue == m.product
}

func (m productMatcher) String() string { return "devices of class " + m.class }

func draGPUs(product string) *inventory.DRADevices {
	return &inventory.DRADevices{Driver: inventory.DriverGPU, Classes: []string{"gpu.nvidia.com"},
		Attributes: map[string]resourcev1.DeviceAttribute{"productName": {StringValue: &product}}}
}

// TestDeviceGangOnlyOnMatchingNodes: a gang with a device request is placed
// only on nodes whose DRA GPUs its matcher accepts, though BinPack would
// take the fuller non-matching node first without it, and it waits
// with the device filter named when no node matches.
func TestDeviceGangOnlyOnMatchingNodes(t *testing.T) {
	c := fleetSpec{name: "c", racks: 1, perRack: 4, gpus: 8}.cluster()
	for i := range c.Nodes {
		if i < 2 {
			c.Nodes[i].DRADevices = draGPUs("A100")
			c.Nodes[i].UsedGPUs = 2 // fuller: BinPack's first choice
		} else {
			c.Nodes[i].DRADevices = draGPUs("H100")
		}
	}
	plain := fleetSpec{name: "p", racks: 1, perRack: 4, gpus: 8}.cluster() // no DRA GPUs at all
	s := NewSnapshot([]inventory.Cluster{c, plain}, nil)

	free := newGang("free", 1, 4).obj()
	p, err := s.Place(free)
	if err != nil || p.Assignments[0].Node != "r00-n00" || p.Assignments[0].Cluster != "c" {
		t.Fatalf("without devices: %+v, %v; want BinPack's fullest node c/r00-n00", p, err)
	}
	g := newGang("dra", 2, 4).obj()
	g.Devices = productMatcher{class: "gpu.nvidia.com", product: "H100"}
	p, err = s.Place(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range p.Assignments {
		if a.Cluster != "c" || (a.Node != "r00-n02" && a.Node != "r00-n03") {
			t.Errorf("member on %s/%s, which has no matching devices", a.Cluster, a.Node)
		}
	}
	big := newGang("big", 3, 8).obj()
	big.Devices = productMatcher{class: "gpu.nvidia.com", product: "H100"}
	if _, err := s.Place(big); err == nil || !strings.Contains(err.Error(), "devices of class gpu.nvidia.com") {
		t.Errorf("3×8 on two matching nodes: err = %v, want a wait naming the device request", err)
	}
	none := newGang("none", 1, 1).obj()
	none.Devices = productMatcher{class: "gpu.nvidia.com", product: "B200"}
	if _, err := s.Place(none); err == nil || !strings.Contains(err.Error(), "device class and selectors") {
		t.Errorf("no matching node: err = %v", err)
	}
}
