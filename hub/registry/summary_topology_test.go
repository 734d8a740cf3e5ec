// SPDX-License-Identifier: Apache-2.0

package registry_test

import (
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/registry"
)

// TestSummarizeTopology: the cluster status carries the topology map the
// agent reported, message included; an inventory without one has none.
func TestSummarizeTopology(t *testing.T) {
	inv := inventory.Cluster{Name: "tg1", Topology: &inventory.Topology{Source: inventory.TopologySourceAuto,
		Message: "no topology labels found on GPU nodes"}}
	want := v1alpha1.TopologySummary{Source: "auto", Message: "no topology labels found on GPU nodes"}
	if s := registry.Summarize(inv, 1); s.Topology == nil || *s.Topology != want {
		t.Errorf("Topology = %+v, want %+v", s.Topology, want)
	}
	inv.Topology = &inventory.Topology{Source: inventory.TopologySourcePreset, Preset: inventory.PresetTopographV1,
		Keys: inventory.LabelKeys{NVLink: "n", Rack: "r", Block: "b", Zone: "z"}}
	want = v1alpha1.TopologySummary{Source: "preset", Preset: "topograph-v1", NVLinkKey: "n", RackKey: "r", BlockKey: "b", ZoneKey: "z"}
	if s := registry.Summarize(inv, 1); s.Topology == nil || *s.Topology != want {
		t.Errorf("Topology = %+v, want %+v", s.Topology, want)
	}
	inv.Topology = nil
	if s := registry.Summarize(inv, 1); s.Topology != nil {
		t.Errorf("Topology = %+v without a report", s.Topology)
	}
}
