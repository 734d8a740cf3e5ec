// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
)

// checker verifies every placement against the fleet independently of the
// scheduler's own indexes: whole gangs, no GPU booked twice, only live and
// matching nodes, required levels and cluster counts kept.
type checker struct {
	nodes   map[string]*cnode
	running map[string][]booking
	// Counters of broken rules.
	partial, double, required, ineligible int
}

type cnode struct {
	gpus, used int
	shares     int // allocatable shares of shared GPUs; used in sharesUsed
	sharesUsed int
	up         bool
	product    string
	keys       [5]string // node, nvlink, rack, block, cluster
}

type booking struct {
	n      *cnode
	gpus   int
	shared bool // gpus are shares
}

func newChecker(clusters []inventory.Cluster) *checker {
	c := &checker{nodes: map[string]*cnode{}, running: map[string][]booking{}}
	for _, cl := range clusters {
		for _, n := range cl.Nodes {
			k := [5]string{cl.Name + "/" + n.Name, cl.Name + "/node:" + n.Name, "", "", cl.Name}
			if n.Clique != "" {
				k[1] = cl.Name + "/clique:" + n.Clique
			}
			k[2] = k[1]
			if n.Rack != "" {
				k[2] = cl.Name + "/rack:" + n.Rack
			}
			k[3] = k[2]
			if n.Block != "" {
				k[3] = cl.Name + "/block:" + n.Block
			}
			cn := &cnode{gpus: n.GPUs, used: n.UsedGPUs, up: n.Schedulable(), product: n.Product, keys: k}
			if n.Shared.Requestable() {
				cn.shares, cn.sharesUsed = n.Shared.Allocatable, n.Shared.Used
			}
			c.nodes[cl.Name+"/"+n.Name] = cn
		}
	}
	return c
}

func (c *checker) setUp(cluster, node string, up bool) {
	if n := c.nodes[cluster+"/"+node]; n != nil {
		n.up = up
	}
}

// start books a placement and counts any rule it breaks.
func (c *checker) start(g placement.Gang, p placement.Placement) {
	members := 0
	seen := [5]map[string]bool{}
	for l := range seen {
		seen[l] = map[string]bool{}
	}
	var books []booking
	for _, a := range p.Assignments {
		n := c.nodes[a.Cluster+"/"+a.Node]
		if n == nil || !n.up || (len(g.Products) > 0 && !contains(g.Products, n.product)) {
			c.ineligible++
			continue
		}
		gpus := a.Members * g.GPUsPerMember
		if g.Shared != nil {
			if n.sharesUsed += gpus; n.sharesUsed > n.shares {
				c.double++
			}
		} else if n.used += gpus; n.used > n.gpus {
			c.double++
		}
		books = append(books, booking{n, gpus, g.Shared != nil})
		members += a.Members
		for l, k := range n.keys {
			seen[l][k] = true
		}
	}
	c.running[g.ID] = books
	if members != g.Members {
		c.partial++
	}
	lv := map[inventory.Level]int{inventory.LevelNode: 0, inventory.LevelNVLink: 1, inventory.LevelRack: 2,
		inventory.LevelBlock: 3, inventory.LevelCluster: 4}
	if l, ok := lv[g.Topology.Required]; ok && len(seen[l]) > 1 {
		c.required++
	}
	if len(seen[4]) > max(1, g.MaxClusters) {
		c.required++
	}
}

func (c *checker) stop(id string) {
	for _, b := range c.running[id] {
		if b.shared {
			b.n.sharesUsed -= b.gpus
		} else {
			b.n.used -= b.gpus
		}
	}
	delete(c.running, id)
}
