// SPDX-License-Identifier: Apache-2.0

package realnodes

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// BenchmarkSplitGangRendezvous measures, per run, the time from `shoal job
// submit` of a 4 × 4-GPU gang that only fits as 2 + 2 over the two real-node
// clusters to the job Succeeded: every member placed, started as a real
// container, resolved rank 0 across clusters, completed the rendezvous and
// exited 0. It reports the p50 and p99 of the runs.
//
//	go test -run '^$' -bench SplitGangRendezvous -benchtime 10x ./test/e2e/realnodes/
func BenchmarkSplitGangRendezvous(b *testing.B) {
	mustCLI(b, "", "queue", "create", "realnodes-bench")
	var took []time.Duration
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("rdv-bench-%d", i)
		manifest := strings.Replace(rendezvousJob(name, 4, 4, 2, nil, "  rendezvous: {processesPerMember: 1}\n"),
			"queue: realnodes", "queue: realnodes-bench", 1)
		start := time.Now()
		mustCLI(b, manifest, "job", "submit", "-f", "-")
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*time.Minute, true,
			func(context.Context) (bool, error) {
				j, err := getJob(b, name)
				if err != nil {
					return false, nil
				}
				if j.Status.Phase == v1alpha1.JobFailed {
					return false, fmt.Errorf("job %s failed: %+v", name, j.Status.Conditions)
				}
				return j.Status.Phase == v1alpha1.JobSucceeded, nil
			})
		took = append(took, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cancelJob(b, name)
		b.StartTimer()
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	q := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	b.ReportMetric(q(0.50).Seconds(), "p50-s")
	b.ReportMetric(q(0.99).Seconds(), "p99-s")
	b.Logf("submit -> rendezvous complete over %d runs: p50 %s, p99 %s, min %s, max %s", len(took),
		q(0.50).Round(time.Millisecond), q(0.99).Round(time.Millisecond), took[0].Round(time.Millisecond),
		took[len(took)-1].Round(time.Millisecond))
}
