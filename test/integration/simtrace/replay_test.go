// SPDX-License-Identifier: Apache-2.0

package simtrace

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/federation/sim"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

const (
	// scale is how much faster than the trace the fleet replays it: a
	// trace minute is 1.5 s on the fleet.
	scale = 40
	// orderGap is how far apart (trace time) two of the simulator's starts
	// in one cluster must be for the fleet to start them in the same order:
	// starts closer than that are one scheduling moment on the fleet too,
	// give or take its latencies, and their order there is not the trace's
	// to decide. (Starts in different clusters are ordered only by the
	// clock, so they are not compared.)
	orderGap = 3 * time.Minute
)

// realJob is what the test saw of one job on the fleet.
type realJob struct {
	job      sim.Job
	submitAt time.Time // when to submit (scaled arrival)
	placed   time.Time // first seen with the placement of its latest epoch
	running  time.Time // first seen Running
	ended    bool      // members marked Succeeded
	clusters []string
	phase    v1alpha1.JobPhase
	epoch    int64
}

// TestTraceReplayAgrees replays federation/sim/testdata/simtrace-jobs.csv
// (24 jobs, one queue, one priority, no time limits) over the fleet of
// simtrace-fleet.csv — two clusters of 4 KWOK nodes, h100-1 (8 H100 each)
// and gb200-2 (4 GB200 each), started by internal/devfleet with the real
// shoal-hub and shoal-agent, and checked against the file — once in the
// simulator (strategy shoal: the hub's placement engine) and once on the
// fleet, 40 times faster (a trace minute is 1.5 s). After one warm-up job,
// each job is submitted through the hub's gRPC API at its trace time / 40;
// it runs for its trace duration / 40 counted from its placement (when its
// GPUs are booked, as in the simulator), after which the test ends its
// members by marking their pods in the workload cluster Succeeded (KWOK
// runs no process), once all of them run.
//
// It compares, for every job, the clusters its gang ran in, and, for every
// two jobs of one cluster whose simulated starts are at least orderGap
// apart, that the fleet placed them in the same order — the placement of
// the epoch that ran: the hub may book a gang on an inventory report that
// does not show a just-committed gang's members yet, which the agents'
// fit check refuses at prepare (hub/scheduler fleet.go, allocations); that
// booking never ran and is logged, not compared. Both are decided by the trace, not
// by timing, because of how it is built: each gang fits in only one
// cluster (its product is H100 or GB200, or it has 8 GPUs per member,
// which only H100 nodes have); all jobs are in one queue with one priority
// and no estimate, so the engine's order (oldest first), its head-of-queue
// reservations (a waiting 4-member gang holds the free nodes: the 1-member
// gang behind it does not backfill) and its tie-breaks depend only on
// which arrivals and ends it has seen; each cluster's jobs come in two
// bursts, the second after the first has drained, so delays never carry
// from one to the other; and within a burst any two events whose order
// changes a decision are at least 2 trace minutes (3 s) apart, more than
// the fleet's delays between an arrival or an end and the decision it
// causes (a few tenths of a second; once 3.5 s on a machine with load 35).
// TestTestTraceIsRobust in federation/sim checks that claim: delaying
// every arrival (in order) and every end at random by up to 2 trace
// minutes, chains of them accumulating, changes neither the clusters nor
// any order compared here.
func TestTraceReplayAgrees(t *testing.T) {
	if testing.Short() {
		t.Skip("builds shoal-hub and shoal-agent and starts a local fleet")
	}
	tr := loadTrace(t)
	want, err := sim.Run(sim.Config{Trace: tr, RecordStarts: true}, "shoal")
	if err != nil {
		t.Fatal(err)
	}
	if want.Finished != len(tr.Jobs) || len(want.Starts) != len(tr.Jobs) {
		t.Fatalf("simulator: %d of %d jobs finished, %d starts", want.Finished, len(tr.Jobs), len(want.Starts))
	}

	bins := buildShoal(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	up := time.Now()
	f, err := devfleet.Up(ctx, devfleet.Options{Dir: t.TempDir(), Clusters: 2, Profiles: []string{"hgx-h100", "gb200-nvl72"},
		Nodes: 4, Out: testWriter{t}, DieWithParent: true, Shoal: bins})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	t.Logf("fleet up in %s", time.Since(up).Round(100*time.Millisecond))
	checkFleetMatches(t, f, tr.Clusters)
	workloads := map[string]kubernetes.Interface{}
	for _, c := range f.Workloads() {
		cs, err := c.Clientset()
		if err != nil {
			t.Fatal(err)
		}
		workloads[c.Name] = cs
	}
	conn := dialHub(t, f.Shoal.Config)
	jobsAPI, queuesAPI := shoalv1.NewJobsClient(conn), shoalv1.NewQueuesClient(conn)
	for _, q := range tr.Queues() {
		if _, err := queuesAPI.Create(ctx, &shoalv1.CreateQueueRequest{Queue: object(t, &v1alpha1.Queue{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindQueue}, ObjectMeta: metav1.ObjectMeta{Name: q.Name}})}); err != nil {
			t.Fatalf("create queue %s: %v", q.Name, err)
		}
	}

	warmUp(ctx, t, jobsAPI, workloads)
	real := replay(ctx, t, tr, jobsAPI, workloads)
	compare(t, tr, want, real)
}

// replay submits each job at its scaled arrival, ends its members after
// its scaled duration once they all run, and returns what it saw once
// every job finished.
func replay(ctx context.Context, t *testing.T, tr *sim.Trace, api shoalv1.JobsClient, workloads map[string]kubernetes.Interface) map[string]*realJob {
	t0 := time.Now().Add(time.Second)
	jobs := map[string]*realJob{}
	var order []*realJob
	for _, j := range tr.Jobs {
		r := &realJob{job: j, submitAt: t0.Add(j.Arrival / scale)}
		jobs[j.Gang.ID] = r
		order = append(order, r)
	}
	next := 0
	for {
		now := time.Now()
		for next < len(order) && !now.Before(order[next].submitAt) {
			submit(ctx, t, api, order[next].job)
			next++
		}
		l, err := api.List(ctx, &shoalv1.ListJobsRequest{Options: &shoalv1.ListOptions{Limit: 500}})
		if err != nil {
			t.Fatalf("list jobs: %v", err)
		}
		now = time.Now()
		done := 0
		for _, o := range l.Items {
			var j v1alpha1.Job
			if err := json.Unmarshal(o.GetJson(), &j); err != nil {
				t.Fatal(err)
			}
			r := jobs[j.Name]
			if r == nil {
				continue
			}
			r.phase = j.Status.Phase
			// A new epoch is a new placement: the one that runs is the start
			// compared (an epoch the hub aborted at prepare never ran).
			if j.Status.Epoch != r.epoch && j.Status.Placement != nil && len(j.Status.Placement.Clusters) > 0 {
				r.epoch, r.placed, r.clusters = j.Status.Epoch, now, slices.Sorted(slices.Values(j.Status.Placement.Clusters))
				t.Logf("%6.1f min  %s placed in %v (epoch %d)", traceMin(t0, now), j.Name, r.clusters, r.epoch)
			}
			if r.running.IsZero() && j.Status.Phase == v1alpha1.JobRunning {
				r.running = now
				t.Logf("%6.1f min  %s running", traceMin(t0, now), j.Name)
			}
			// Its trace duration counts from its placement, when its GPUs are
			// booked, as in the simulator; it ends once all its members run.
			if j.Status.Phase == v1alpha1.JobRunning && !r.ended && !now.Before(r.placed.Add(r.job.Duration/scale)) {
				if r.ended = endMembers(ctx, t, workloads, j.Name); r.ended {
					t.Logf("%6.1f min  %s ended", traceMin(t0, now), j.Name)
				}
			}
			if j.Status.Phase.Terminal() {
				done++
			}
		}
		if done == len(order) {
			return jobs
		}
		select {
		case <-ctx.Done():
			var left []string
			for _, r := range order {
				if !r.phase.Terminal() {
					left = append(left, fmt.Sprintf("%s %s", r.job.Gang.ID, r.phase))
				}
			}
			t.Fatalf("replay did not finish: %v", left)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// traceMin is the trace time of a moment of the replay that began at t0.
func traceMin(t0, at time.Time) float64 {
	return float64(at.Sub(t0)*scale) / float64(time.Minute)
}

// warmUp runs one job through the fleet before the replay, so that the
// hub's first cycles (caches filling, the queue appearing) do not delay
// the trace's first jobs.
func warmUp(ctx context.Context, t *testing.T, api shoalv1.JobsClient, workloads map[string]kubernetes.Interface) {
	t.Helper()
	start := time.Now()
	warm := sim.Job{Gang: placement.Gang{ID: "warm-up", Queue: "trace", Members: 1, GPUsPerMember: 1}}
	submit(ctx, t, api, warm)
	for ended := false; ; {
		o, err := api.Get(ctx, &shoalv1.GetJobRequest{Name: warm.Gang.ID})
		if err != nil {
			t.Fatal(err)
		}
		var j v1alpha1.Job
		if err := json.Unmarshal(o.GetJson(), &j); err != nil {
			t.Fatal(err)
		}
		if j.Status.Phase == v1alpha1.JobSucceeded {
			t.Logf("warm-up job ran in %s", time.Since(start).Round(10*time.Millisecond))
			return
		}
		if j.Status.Phase == v1alpha1.JobRunning && !ended {
			ended = endMembers(ctx, t, workloads, warm.Gang.ID)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("warm-up job: phase %s", j.Status.Phase)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func submit(ctx context.Context, t *testing.T, api shoalv1.JobsClient, j sim.Job) {
	t.Helper()
	g := j.Gang
	job := testjob.New(g.ID).Queue(g.Queue).Members(int32(g.Members)).GPUs(int32(g.GPUsPerMember)).
		Priority(v1alpha1.PriorityBatch).With(func(j *v1alpha1.Job) { j.Spec.Placement.GPUProducts = g.Products }).Obj()
	if _, err := api.Submit(ctx, &shoalv1.SubmitJobRequest{Job: object(t, job)}); err != nil {
		t.Fatalf("submit %s: %v", g.ID, err)
	}
}

// endMembers marks the job's running local pods Succeeded (exit code 0) in
// every workload cluster, as their process ending would; false when it
// found none.
func endMembers(ctx context.Context, t *testing.T, workloads map[string]kubernetes.Interface, job string) bool {
	t.Helper()
	ended := 0
	for name, cs := range workloads {
		l, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
		if err != nil {
			t.Fatalf("%s: list pods of %s: %v", name, job, err)
		}
		for _, p := range l.Items {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
					FinishedAt: metav1.Now()}}}}
			if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("%s: end %s: %v", name, p.Name, err)
			}
			ended++
		}
	}
	return ended > 0
}

// compare checks the fleet's clusters and start order against the simulator's.
func compare(t *testing.T, tr *sim.Trace, want sim.Result, real map[string]*realJob) {
	t.Helper()
	var t0 time.Time
	for _, r := range real {
		if t0.IsZero() || r.submitAt.Before(t0) {
			t0 = r.submitAt
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "job   sim start  fleet placed (trace min)  sim clusters  fleet clusters\n")
	for _, s := range want.Starts {
		r := real[s.Job]
		at := traceMin(t0, r.placed)
		fmt.Fprintf(&table, "%-5s %9.1f  %24.1f  %-12s  %v\n", s.Job, s.At.Minutes(), at, strings.Join(s.Clusters, ","), r.clusters)
	}
	t.Logf("starts:\n%s", table.String())
	for _, s := range want.Starts {
		r := real[s.Job]
		if r.phase != v1alpha1.JobSucceeded {
			t.Errorf("%s: phase %s on the fleet, want Succeeded", s.Job, r.phase)
		}
		if r.epoch != 1 {
			// The hub may book a gang on an inventory report that does not
			// show a just-committed gang's members yet; the agents' fit check
			// refuses it at prepare and it is placed again (hub/scheduler
			// fleet.go, allocations). The simulator has no such moment.
			t.Logf("%s: ran at epoch %d on the fleet (an earlier booking was aborted)", s.Job, r.epoch)
		}
		if !slices.Equal(r.clusters, s.Clusters) {
			t.Errorf("%s ran in %v on the fleet, in %v in the simulator", s.Job, r.clusters, s.Clusters)
		}
	}
	pairs := 0
	for i, a := range want.Starts {
		for _, b := range want.Starts[i+1:] {
			if !slices.Equal(a.Clusters, b.Clusters) || b.At-a.At < orderGap {
				continue
			}
			pairs++
			if ra, rb := real[a.Job], real[b.Job]; !ra.placed.Before(rb.placed) {
				t.Errorf("simulator starts %s (%.0f min) before %s (%.0f min); the fleet placed %s %s after %s",
					a.Job, a.At.Minutes(), b.Job, b.At.Minutes(), a.Job, ra.placed.Sub(rb.placed).Round(time.Millisecond), b.Job)
			}
		}
	}
	t.Logf("%d jobs, %d ordered pairs of starts in one cluster compared", len(tr.Jobs), pairs)
}
