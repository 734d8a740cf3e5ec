// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// FleetColumns are the columns of a fleet file, one row per node (or per
// group of identical nodes with count): cluster, node, gpus are required;
// product, clique (multi-node NVLink domain), rack, block, zone, region (a
// cluster label) and count are optional.
var FleetColumns = []string{"cluster", "node", "gpus", "product", "clique", "rack", "block", "zone", "region", "count"}

// ReadFleet reads a fleet file (CSV with a header of FleetColumns, or JSON
// lines with those keys) into empty, Ready inventories sorted by cluster
// and node name. A row with count n > 1 stands for n nodes named
// <node>-<i> (i from 0).
func ReadFleet(r io.Reader, f Format) ([]inventory.Cluster, error) {
	rows, header, err := readRows(r, f, "", nil)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, c := range FleetColumns {
		known[c] = true
	}
	for _, h := range header {
		if !known[h] {
			return nil, fmt.Errorf("fleet: unknown column %q (want %v)", h, FleetColumns)
		}
	}
	for _, c := range []string{"cluster", "node", "gpus"} {
		if !contains(header, c) {
			return nil, fmt.Errorf("fleet: column %q is required (have %v)", c, header)
		}
	}
	byName := map[string]*inventory.Cluster{}
	seen := map[string]bool{}
	for _, rw := range rows {
		cl, name := rw.get("cluster"), rw.get("node")
		if cl == "" || name == "" {
			return nil, &rowError{line: rw.line, err: fmt.Errorf("cluster and node must be set")}
		}
		gpus, err := strconv.Atoi(rw.get("gpus"))
		if err != nil || gpus < 0 {
			return nil, &rowError{line: rw.line, col: "gpus", err: fmt.Errorf("want a whole number ≥ 0, got %q", rw.get("gpus"))}
		}
		count := 1
		if s := rw.get("count"); s != "" {
			if count, err = strconv.Atoi(s); err != nil || count < 1 {
				return nil, &rowError{line: rw.line, col: "count", err: fmt.Errorf("want a whole number ≥ 1, got %q", s)}
			}
		}
		c := byName[cl]
		if c == nil {
			c = &inventory.Cluster{Name: cl, Labels: map[string]string{}}
			byName[cl] = c
		}
		if reg := rw.get("region"); reg != "" {
			if old := c.Labels["region"]; old != "" && old != reg {
				return nil, &rowError{line: rw.line, col: "region", err: fmt.Errorf("cluster %s is in region %q already", cl, old)}
			}
			c.Labels["region"] = reg
		}
		for i := range count {
			n := name
			if count > 1 {
				n = fmt.Sprintf("%s-%d", name, i)
			}
			if seen[cl+"/"+n] {
				return nil, &rowError{line: rw.line, col: "node", err: fmt.Errorf("node %s/%s listed twice", cl, n)}
			}
			seen[cl+"/"+n] = true
			c.Nodes = append(c.Nodes, inventory.Node{Name: n, Product: rw.get("product"), GPUs: gpus, CapacityGPUs: gpus,
				Clique: rw.get("clique"), Rack: rw.get("rack"), Block: rw.get("block"), Zone: rw.get("zone"), Ready: true})
		}
	}
	if len(byName) == 0 {
		return nil, fmt.Errorf("fleet: no nodes")
	}
	out := make([]inventory.Cluster, 0, len(byName))
	for _, c := range byName {
		sort.Slice(c.Nodes, func(i, j int) bool { return c.Nodes[i].Name < c.Nodes[j].Name })
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
