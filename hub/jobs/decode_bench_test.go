// SPDX-License-Identifier: Apache-2.0

package jobs_test

import (
	"encoding/json"
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// BenchmarkDecodeJob is the cost of decoding one stored job, the bulk of a
// List page's latency.
func BenchmarkDecodeJob(b *testing.B) {
	j := benchJob("job-0000001", benchQueues[0])
	v1alpha1.SetJobDefaults(j)
	raw, err := json.Marshal(j)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(raw)), "bytes/job")
	for b.Loop() {
		var out v1alpha1.Job
		if err := json.Unmarshal(raw, &out); err != nil {
			b.Fatal(err)
		}
	}
}
