// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := Node{Name: "n1", GPUs: 8, CapacityGPUs: 8, UsedGPUs: 9, MIG: map[string]MIGResource{"nvidia.com/mig-1g.10gb": {Allocatable: 7}}}
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  string
	}{
		{"valid, over-committed used count kept", []Node{ok}, ""},
		{"no name", []Node{{GPUs: 1}}, "nodes[0].name: required"},
		{"duplicate", []Node{ok, ok}, "nodes[1] (n1).name: duplicate node"},
		{"negative gpus", []Node{{Name: "n2", GPUs: -8}}, "nodes[0] (n2).gpus: -8 must not be negative"},
		{"negative used", []Node{{Name: "n2", GPUs: 8, UsedGPUs: -1}}, "usedGPUs: -1 must not be negative"},
		{"allocatable over capacity", []Node{{Name: "n2", GPUs: 9, CapacityGPUs: 8}}, "exceeds the capacity 8"},
		{"negative MIG", []Node{{Name: "n2", MIG: map[string]MIGResource{"nvidia.com/mig-1g.10gb": {Allocatable: -1}}}}, "mig[nvidia.com/mig-1g.10gb]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Cluster{Name: "c", Nodes: tc.nodes}
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
