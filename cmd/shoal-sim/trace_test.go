// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shoal-dev/shoal/federation/sim"
)

// TestReplayPAIExample replays rows in the published format of Alibaba's
// pai_task_table with the example mapping of examples/traces: the task
// without GPUs, the failed one and the one with no end time are left out,
// percent GPUs round up, MISC means any product.
func TestReplayPAIExample(t *testing.T) {
	tf := traceFlags{workload: "testdata/pai_task_table.csv", fleet: "../../examples/traces/pai-fleet.csv",
		mapping: "../../examples/traces/alibaba-pai-2020.yaml"}
	tr, err := tf.load()
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 4 || tr.Skipped != 3 {
		t.Fatalf("%d jobs, %d skipped; want 4, 3", len(tr.Jobs), tr.Skipped)
	}
	byID := map[string]sim.Job{}
	for _, j := range tr.Jobs {
		byID[j.Gang.ID] = j
	}
	if g := byID["job_c"].Gang; g.Members != 4 || g.GPUsPerMember != 8 || !slices.Equal(g.Products, []string{"Tesla-V100-SXM2-32GB"}) {
		t.Errorf("job_c = %+v", g)
	}
	if g := byID["job_b"].Gang; g.GPUsPerMember != 1 || byID["job_b"].Duration.Seconds() != 1200 || byID["job_b"].Arrival.Seconds() != 300 {
		t.Errorf("job_b = %+v", byID["job_b"])
	}
	if g := byID["job_f"].Gang; len(g.Products) != 0 || g.Queue != "pai" {
		t.Errorf("job_f = %+v", g)
	}
	out := filepath.Join(t.TempDir(), "out.json")
	if err := replay(tr, []string{"shoal", "fifo-first-fit"}, 1, 0, false, true, 1, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rs []sim.Result
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Finished != 4 || len(rs[0].Starts) != 4 || rs[0].Fleet != "pai_task_table" {
		t.Fatalf("results %+v", rs)
	}
}
