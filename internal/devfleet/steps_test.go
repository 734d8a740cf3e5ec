// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"testing"
)

func TestStepsCountThePlanOnce(t *testing.T) {
	f := &Fleet{opts: Options{Shoal: &ShoalOptions{}}}
	f.Clusters = []*Cluster{{Name: "hub", Role: RoleHub}, {Name: "h100-1", Role: RoleWorkload, Nodes: 4},
		{Name: "a100-2", Role: RoleWorkload, Nodes: 3, RealNodes: []*RealNode{{}}}}
	var got []string
	f.opts.Progress = func(done, total int, step string) { got = append(got, fmt.Sprintf("%d/%d %s", done, total, step)) }
	f.planSteps()
	// 3 kube-apiservers, 4+2 KWOK nodes, 1 real-node step, the hub, 2 agents started and 2 registered.
	if f.steps.total != 3+6+1+1+4 {
		t.Fatalf("planned %d steps, want 15", f.steps.total)
	}
	f.stepTo("nodes/h100-1", 2, "2 nodes")
	f.stepTo("nodes/h100-1", 1, "fewer: ignored")
	f.stepTo("nodes/h100-1", 2, "same: ignored")
	f.stepTo("nodes/h100-1", 4, "4 nodes")
	f.stepTo("shoal-hub", 1, "hub")
	want := []string{"2/15 2 nodes", "4/15 4 nodes", "5/15 hub"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reported %q, want %q", got, want)
	}
	f.opts.Shoal = nil
	f.planSteps()
	if f.steps.total != 3+6+1 {
		t.Fatalf("without Shoal planned %d steps, want 10", f.steps.total)
	}
}
