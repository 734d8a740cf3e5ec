// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
)

// reportRuns counts the runs of TestHeldMembersReportedPerCluster.
var reportRuns atomic.Int32

// TestHeldMembersReportedPerCluster: the members of a 64-member gang over
// two clusters, held by their agents until the commit, are reported Prepared by
// one report per cluster: while the test holds the commit stamps, the hub
// has committed, exactly one hub pod per cluster carries the report
// (shoal.dev/PreparedMembers), which names every member of its cluster,
// and no other hub pod was written. Released, every member runs and shows
// its own Prepared condition, the reports gone.
func TestHeldMembersReportedPerCluster(t *testing.T) {
	skipShort(t)
	job := fmt.Sprintf("prep-report-%d", reportRuns.Add(1))
	hold := holdCommits(t, job, nil)

	const members = 64 // 256 GPUs: more than one cluster holds
	submit(t, newJob(job, "e2e", members, 4, func(j *v1alpha1.Job) { j.Spec.Placement.MaxClusters = 2 }))
	eventually(t, time.Minute, "gang committed", func(ctx context.Context) (bool, error) {
		j, _, err := h.jobs.Get(ctx, job)
		if err != nil {
			return false, err
		}
		d := jobs.DispatchOf(j)
		return d != nil && d.Phase == v1alpha1.DispatchCommitted, fmt.Errorf("phase %s dispatch %+v", j.Status.Phase, d)
	})
	hp, err := hubPods(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	if len(hp) != members {
		t.Fatalf("%d hub pods at the commit, want %d", len(hp), members)
	}
	carriers := map[string][]string{} // cluster → hub pods carrying a report
	named := map[string]string{}      // member pod → cluster of the report naming it
	clusters := map[string]int{}      // cluster → members
	for _, p := range hp {
		c := p.Labels[v1alpha1.LabelCluster]
		clusters[c]++
		msg := v1alpha1.PreparedMembersReport(&p)
		if msg == "" {
			if len(p.Status.Conditions) > 0 {
				t.Errorf("hub pod %s written before the commit: %+v", p.Name, p.Status.Conditions)
			}
			continue
		}
		carriers[c] = append(carriers[c], p.Name)
		epoch, _ := strconv.ParseInt(p.Labels[v1alpha1.LabelEpoch], 10, 64)
		if err := v1alpha1.ParseMembers(msg, members, func(i int32) { named[v1alpha1.MemberPodName(job, epoch, i)] = c }); err != nil {
			t.Errorf("report on %s: %v", p.Name, err)
		}
	}
	if len(clusters) != 2 {
		t.Errorf("members on clusters %v, want two", clusters)
	}
	for c := range clusters {
		if len(carriers[c]) != 1 {
			t.Errorf("cluster %s: reports on %v, want one", c, carriers[c])
		}
	}
	for _, p := range hp {
		if c := named[p.Name]; c != p.Labels[v1alpha1.LabelCluster] {
			t.Errorf("member %s of cluster %s named by a report of %q", p.Name, p.Labels[v1alpha1.LabelCluster], c)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d members on %d clusters at the commit: reports on %v", members, len(clusters), carriers)

	hold.release()
	eventually(t, time.Minute, "every member running with its own Prepared condition", func(ctx context.Context) (bool, error) {
		hp, err := hubPods(ctx, job)
		if err != nil {
			return false, err
		}
		for _, p := range hp {
			c := v1alpha1.PreparedCondition(&p)
			if p.Status.Phase != corev1.PodRunning || c == nil || c.Status != corev1.ConditionTrue ||
				v1alpha1.PreparedMembersReport(&p) != "" {
				return false, fmt.Errorf("member %s: %s, prepared %+v, report %q", p.Name, p.Status.Phase, c,
					v1alpha1.PreparedMembersReport(&p))
			}
		}
		return len(hp) == members, fmt.Errorf("%d hub pods", len(hp))
	})
	if _, _, err := h.jobs.Cancel(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	waitNothingLeft(t, job, time.Minute)
}
