// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"sort"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// GPU products of the generated fleets, as GPU Feature Discovery names them.
const (
	ProductH100  = "NVIDIA-H100-80GB-HBM3"
	ProductGB200 = "NVIDIA-GB200"
)

// ClusterShape describes one generated cluster.
type ClusterShape struct {
	Name          string
	Nodes         int
	GPUsPerNode   int
	NodesPerRack  int
	RacksPerBlock int  // 0: no block labels
	CliquePerRack bool // one multi-node NVLink domain per rack (GB200 NVL72)
	Product       string
	Region        string
}

// Fleets are the benchmark fleets of docs/benchmarks.md, by name.
var Fleets = map[string][]ClusterShape{
	"F-S": {{Name: "s1", Nodes: 32, GPUsPerNode: 8, NodesPerRack: 8, Product: ProductH100, Region: "eu"}},
	"F-M": {
		{Name: "m1", Nodes: 128, GPUsPerNode: 8, NodesPerRack: 16, RacksPerBlock: 4, Product: ProductH100, Region: "eu"},
		{Name: "m2", Nodes: 128, GPUsPerNode: 8, NodesPerRack: 16, RacksPerBlock: 4, Product: ProductH100, Region: "us"},
		{Name: "m3", Nodes: 128, GPUsPerNode: 8, NodesPerRack: 16, RacksPerBlock: 4, Product: ProductH100, Region: "ap"},
		{Name: "m4", Nodes: 14 * 18, GPUsPerNode: 4, NodesPerRack: 18, RacksPerBlock: 7, CliquePerRack: true, Product: ProductGB200, Region: "us"},
	},
	"F-L":  repeat("l", 8, ClusterShape{Nodes: 1024, GPUsPerNode: 8, NodesPerRack: 16, RacksPerBlock: 8, Product: ProductH100}),
	"F-XL": repeat("x", 100, ClusterShape{Nodes: 1000, GPUsPerNode: 8, NodesPerRack: 16, RacksPerBlock: 8, Product: ProductH100}),
}

func repeat(prefix string, n int, s ClusterShape) []ClusterShape {
	out := make([]ClusterShape, n)
	regions := []string{"eu", "us", "ap"}
	for i := range out {
		out[i] = s
		out[i].Name = fmt.Sprintf("%s%d", prefix, i+1)
		out[i].Region = regions[i%len(regions)]
	}
	return out
}

// FleetNames lists the fleets, smallest first.
func FleetNames() []string {
	names := make([]string, 0, len(Fleets))
	for n := range Fleets {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return fleetGPUs(Fleets[names[i]]) < fleetGPUs(Fleets[names[j]]) })
	return names
}

func fleetGPUs(cs []ClusterShape) int {
	t := 0
	for _, c := range cs {
		t += c.Nodes * c.GPUsPerNode
	}
	return t
}

// Fleet builds the empty inventories of a named fleet.
func Fleet(name string) ([]inventory.Cluster, error) {
	shapes, ok := Fleets[name]
	if !ok {
		return nil, fmt.Errorf("unknown fleet %q (want one of %v)", name, FleetNames())
	}
	out := make([]inventory.Cluster, 0, len(shapes))
	for _, s := range shapes {
		out = append(out, s.Build())
	}
	return out, nil
}

// Build returns the cluster's inventory: every node Ready and empty.
func (s ClusterShape) Build() inventory.Cluster {
	c := inventory.Cluster{Name: s.Name, Labels: map[string]string{"region": s.Region}, Nodes: make([]inventory.Node, s.Nodes)}
	for i := range s.Nodes {
		rack := i / s.NodesPerRack
		n := inventory.Node{Name: fmt.Sprintf("%s-n%05d", s.Name, i), Product: s.Product, GPUs: s.GPUsPerNode,
			CapacityGPUs: s.GPUsPerNode, Rack: fmt.Sprintf("r%03d", rack), Ready: true}
		if s.RacksPerBlock > 0 {
			n.Block = fmt.Sprintf("b%02d", rack/s.RacksPerBlock)
		}
		if s.CliquePerRack {
			n.Clique = fmt.Sprintf("%s-nvl%03d", s.Name, rack)
		}
		c.Nodes[i] = n
	}
	return c
}
