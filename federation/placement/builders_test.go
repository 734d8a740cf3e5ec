// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// fleetSpec describes a test cluster: racks of nodes with GPUs each.
type fleetSpec struct {
	name           string
	racks, perRack int
	gpus           int
	product        string
	clique         bool // one NVLink clique per rack
	blockOf        int  // racks per block (0: no block label)
}

func (f fleetSpec) cluster() inventory.Cluster {
	c := inventory.Cluster{Name: f.name, Labels: map[string]string{"region": f.name}}
	product := f.product
	if product == "" {
		product = "H100"
	}
	for r := range f.racks {
		for n := range f.perRack {
			node := inventory.Node{
				Name: fmt.Sprintf("r%02d-n%02d", r, n), Product: product, GPUs: f.gpus,
				Rack: fmt.Sprintf("r%02d", r), Ready: true,
			}
			if f.clique {
				node.Clique = fmt.Sprintf("c%02d", r)
			}
			if f.blockOf > 0 {
				node.Block = fmt.Sprintf("b%02d", r/f.blockOf)
			}
			c.Nodes = append(c.Nodes, node)
		}
	}
	return c
}

// gang builds a test gang.
type gangB struct{ g Gang }

func newGang(id string, members, gpm int) *gangB {
	return &gangB{g: Gang{ID: id, Queue: "q", Members: members, GPUsPerMember: gpm, Priority: PriorityBatch, Preemptible: true}}
}
func (b *gangB) required(l inventory.Level) *gangB { b.g.Topology.Required = l; return b }
func (b *gangB) maxClusters(n int) *gangB          { b.g.MaxClusters = n; return b }
func (b *gangB) products(p ...string) *gangB       { b.g.Products = p; return b }
func (b *gangB) queue(q string) *gangB             { b.g.Queue = q; return b }
func (b *gangB) priority(p int32, pre bool) *gangB { b.g.Priority, b.g.Preemptible = p, pre; return b }
func (b *gangB) policy(p Policy) *gangB            { b.g.Policy = p; return b }
func (b *gangB) mig(res string) *gangB             { b.g.MIGResource = res; return b }
func (b *gangB) obj() Gang                         { return b.g }
