// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// Harness is one run: the hub, the simulated clusters and the load.
type Harness struct {
	cfg      Config
	Hub      *Hub
	Clusters []*SimCluster
	stop     context.CancelFunc
	group    *errgroup.Group
	tracker  *tracker
	// Progress, when set, gets one line per step.
	Progress func(format string, args ...any)
}

// Start brings up the hub and every simulated cluster, registered and with
// their virtual nodes, and the queue the jobs go to.
func Start(ctx context.Context, cfg Config, progress func(string, ...any)) (*Harness, *Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, nil, err
	}
	if progress == nil {
		progress = func(string, ...any) {}
	}
	res := &Result{Inputs: Inputs{Clusters: cfg.Clusters, Nodes: cfg.Nodes, Profiles: cfg.Profiles, Jobs: cfg.Jobs,
		Rate: cfg.Rate, Submitters: cfg.Submitters, Gangs: cfg.Gangs, RunMin: cfg.RunMin.String(),
		RunMax: cfg.RunMax.String(), Hold: cfg.Hold.String(), HubArgs: cfg.HubArgs, HubEnv: cfg.HubEnv}}
	start := time.Now()
	hub, err := StartHub(ctx, cfg.Dir, cfg.HubBinary, cfg.HubArgs, cfg.HubEnv)
	if err != nil {
		return nil, nil, fmt.Errorf("start the hub: %w", err)
	}
	res.HubStartSeconds = time.Since(start).Seconds()
	progress("hub up in %.1f s (logs in %s)", res.HubStartSeconds, cfg.Dir)
	runCtx, stop := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(runCtx)
	h := &Harness{cfg: cfg, Hub: hub, stop: stop, group: g, tracker: newTracker(), Progress: progress}
	fail := func(err error) (*Harness, *Result, error) {
		h.Stop()
		return nil, nil, err
	}
	q, _ := json.Marshal(testqueue.New(Queue).Obj())
	if _, err := hub.Queues.Create(ctx, &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: q}}); err != nil {
		return fail(fmt.Errorf("create queue %s: %w", Queue, err))
	}
	start = time.Now()
	for i := range cfg.Clusters {
		p, _ := devfleet.LookupProfile(cfg.Profiles[i%len(cfg.Profiles)])
		c, err := NewSimCluster(ctx, hub, p.Short+"-"+strconv.Itoa(i+1), p, cfg.Nodes, "local")
		if err != nil {
			return fail(err)
		}
		res.Inputs.GPUs += cfg.Nodes * p.GPUsPerNode()
		h.Clusters = append(h.Clusters, c)
		actx := klog.NewContext(gctx, klog.FromContext(gctx).WithValues("cluster", c.Workload.Name))
		g.Go(func() error { return c.Kubelet.Run(actx, 2) })
		g.Go(func() error {
			if err := c.Agent.Run(actx); err != nil && actx.Err() == nil {
				return fmt.Errorf("agent of %s: %w", c.Workload.Name, err)
			}
			return nil
		})
	}
	if err := h.waitRegistered(ctx, gctx); err != nil {
		return fail(err)
	}
	res.RegisterSeconds = time.Since(start).Seconds()
	progress("%d clusters × %d nodes registered in %.1f s", cfg.Clusters, cfg.Nodes, res.RegisterSeconds)
	ready := make(chan struct{})
	watchJobs, closeWatch, err := hub.NewJobsClient()
	if err != nil {
		return fail(err)
	}
	g.Go(func() error {
		defer func() { _ = closeWatch() }()
		h.tracker.watch(gctx, watchJobs, ready)
		return nil
	})
	select {
	case <-ready:
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	return h, res, nil
}

// waitRegistered waits until every cluster is Ready on the hub, has its
// virtual nodes in the hub cluster and its whole inventory on the hub (what
// the scheduler places on), or an agent failed: the load then measures the
// hub, not the clusters' first reports.
func (h *Harness) waitRegistered(ctx, agents context.Context) error {
	pending := map[string]bool{}
	for _, c := range h.Clusters {
		pending[c.Workload.Name] = true
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		if agents.Err() != nil {
			return false, fmt.Errorf("an agent stopped: %w", context.Cause(agents))
		}
		states := map[string]string{}
		opts := &shoalv1.ListOptions{Limit: 500}
		for {
			resp, err := h.Hub.Clusters.ListClusters(ctx, &shoalv1.ListClustersRequest{Options: opts})
			if err != nil {
				return false, nil
			}
			for _, o := range resp.Items {
				var c v1alpha1.Cluster
				if json.Unmarshal(o.GetJson(), &c) == nil {
					states[c.Name] = string(c.Status.State)
				}
			}
			if resp.GetMeta().GetContinue() == "" {
				break
			}
			opts.Continue = resp.Meta.Continue
		}
		nodes, err := devfleet.VirtualNodes(ctx, h.Hub.Kube)
		if err != nil {
			return false, nil
		}
		for name := range pending {
			if states[name] == "Ready" && nodes[name] > 0 && h.inventoryIn(ctx, name) {
				delete(pending, name)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("clusters %v not registered: %w", keys(pending), err)
	}
	return nil
}

// Load submits the jobs and measures, then waits for the jobs (every job
// to succeed with WaitFinished, else Hold), and fills res.
func (h *Harness) Load(ctx context.Context, res *Result) error {
	cfg := h.cfg
	before, err := scrape(ctx, h.Hub.Fleet.Shoal.HTTP+"/metrics")
	if err != nil {
		return err
	}
	pid := h.Hub.Pid()
	cpu0 := cpuTimes(h.Hub.Fleet)
	var peak int64
	sample := func() {
		if _, p, err := rss(pid); err == nil {
			peak = max(peak, p)
		}
	}
	loadCtx, endLoad := context.WithCancel(ctx)
	defer endLoad()
	var probes []time.Duration
	var probeErr error
	var wg sync.WaitGroup
	wg.Go(func() { probes, probeErr = h.probe(loadCtx) })
	if cfg.CPUProfile > 0 && cfg.ProfileFile != "" {
		wg.Go(func() { h.profile(loadCtx, res) })
	}
	start := time.Now()
	lat, errs := cfg.submit(ctx, h.Hub.NewJobsClient, h.tracker)
	res.SubmitSeconds = time.Since(start).Seconds()
	res.SubmitCall, res.SubmitErrors = percentiles(lat), firstN(errs, 20)
	res.SubmitRate = float64(len(lat)) / res.SubmitSeconds
	h.Progress("%d jobs submitted in %.1f s (%.0f/s), %d refused", len(lat), res.SubmitSeconds, res.SubmitRate, len(errs))
	if len(errs) > 0 {
		h.Progress("first refusal: %s", errs[0])
	}
	for _, f := range []struct {
		name   string
		req    *shoalv1.ListJobsRequest
		repeat int
	}{
		{"queue=" + Queue + ",phase=Failed (matches none)", &shoalv1.ListJobsRequest{Queue: Queue, Phase: string(v1alpha1.JobFailed)}, 10},
		{"phase=Pending", &shoalv1.ListJobsRequest{Phase: string(v1alpha1.JobPending)}, 0},
		{"all", &shoalv1.ListJobsRequest{}, 0},
	} {
		d, n, err := timeList(ctx, h.Hub.Jobs, f.req)
		if err != nil {
			return fmt.Errorf("list %s: %w", f.name, err)
		}
		lt := ListTiming{Filter: f.name, Items: n, Seconds: d.Seconds()}
		h.Progress("list %s: %d jobs in %.3f s", f.name, n, d.Seconds())
		if f.repeat > 0 {
			var ds []time.Duration
			for range f.repeat {
				time.Sleep(200 * time.Millisecond)
				d, _, err := timeList(ctx, h.Hub.Jobs, f.req)
				if err != nil {
					return fmt.Errorf("list %s again: %w", f.name, err)
				}
				ds = append(ds, d)
			}
			p := percentiles(ds)
			lt.Repeats = &p
			h.Progress("list %s %d times more: p50 %.3f s, p99 %.3f s", f.name, f.repeat, p.P50, p.P99)
		}
		res.Lists = append(res.Lists, lt)
	}
	deadline := time.Now().Add(cfg.Hold)
	if cfg.WaitFinished {
		deadline = start.Add(cfg.Timeout)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := time.Now()
	for time.Now().Before(deadline) {
		sample()
		placed, ran, phases := h.tracker.counts()
		if cfg.WaitFinished && phases[v1alpha1.JobSucceeded] == cfg.Jobs {
			break
		}
		if time.Since(last) >= 10*time.Second {
			h.Progress("placed %d, ran %d, phases %v", placed, ran, phases)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	endLoad()
	wg.Wait()
	sample()
	after, err := scrape(ctx, h.Hub.Fleet.Shoal.HTTP+"/metrics")
	if err != nil {
		return err
	}
	res.Cycle = histogramDelta(before, after, CycleFamily, nil)
	res.CycleCPU = histogramDelta(before, after, CycleCPUFamily, nil)
	res.Breakdown, res.Counters = breakdown(before, after)
	res.CPUSeconds = map[string]float64{}
	for name, d := range cpuTimes(h.Hub.Fleet) {
		res.CPUSeconds[name] = (d - cpu0[name]).Seconds()
	}
	res.LoadSeconds = time.Since(start).Seconds()
	now, p, err := rss(pid)
	if err != nil {
		return err
	}
	res.HubRSSMiB, res.HubPeakRSSMiB = mib(now), mib(max(p, peak))
	res.HubHeap = heapOf(after)
	if m, err := procStatus(pid); err == nil {
		res.HubAnonMiB, res.HubFileMiB = mib(m["RssAnon"]), mib(m["RssFile"])
	}
	if cfg.HeapProfileFile != "" {
		if live, err := h.heapProfile(ctx, cfg.HeapProfileFile); err != nil {
			h.Progress("hub heap profile: %v", err)
			res.HeapProfileError = err.Error()
		} else {
			res.HubHeap.LiveMiB, res.HeapProfile = live, cfg.HeapProfileFile
			h.Progress("hub heap profile in %s: %.0f MiB live", cfg.HeapProfileFile, live)
		}
	}
	if self, _, err := rss(os.Getpid()); err == nil {
		res.HarnessRSSMiB = mib(self)
	}
	res.SubmitToPlaced = percentiles(h.tracker.submitLatencies())
	res.LatePlacements = h.latePlacements(ctx, start, 5)
	perNode := map[string]int{}
	for _, c := range h.Clusters {
		perNode[c.Workload.Name] = c.Workload.Profile.GPUsPerNode()
	}
	over, err := overbookedNodes(ctx, h.Hub.Jobs, perNode)
	if err != nil {
		return fmt.Errorf("bookings per node: %w", err)
	}
	res.OverbookedNodes = len(over)
	res.OverbookedExamples = over[:min(len(over), 10)]
	h.Progress("nodes booked beyond their GPUs: %d %v", len(over), res.OverbookedExamples)
	res.InventoryToHub = percentiles(probes)
	if probeErr != nil {
		res.InventoryError = probeErr.Error()
	}
	placed, ran, phases := h.tracker.counts()
	res.Jobs = JobCounts{Placed: placed, Ran: ran, Phases: map[string]int{}}
	for p, n := range phases {
		res.Jobs.Phases[string(p)] = n
	}
	h.tracker.mu.Lock()
	res.Jobs.Aborted = len(h.tracker.aborts)
	h.tracker.mu.Unlock()
	for _, c := range h.Clusters {
		s := c.Kubelet.Stats()
		res.MembersRan += s.Ran
		res.MembersFinished += s.Finished
		res.Overbooked = append(res.Overbooked, s.Overbooked...)
	}
	return nil
}

// probe times cfg.InventoryProbes inventory changes, one a second, on the
// last node of each cluster in turn (cordon, then uncordon), until ctx ends.
func (h *Harness) probe(ctx context.Context) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < h.cfg.InventoryProbes; i++ {
		c := h.Clusters[(i/2)%len(h.Clusters)].Workload
		d, err := probeInventory(ctx, h.Hub, c, c.Nodes[len(c.Nodes)-1], i%2 == 0, 30*time.Second)
		if errors.Is(err, context.Canceled) { // the load ended: leave no node cordoned
			_, _ = probeInventory(context.Background(), h.Hub, c, c.Nodes[len(c.Nodes)-1], false, 0)
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, d)
		select {
		case <-ctx.Done():
			return out, nil
		case <-time.After(time.Second):
		}
	}
	return out, nil
}

// Stop stops the agents, the kubelets and the hub.
func (h *Harness) Stop() {
	h.stop()
	_ = h.group.Wait()
	_ = h.Hub.Stop()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func firstN(s []string, n int) []string { return s[:min(n, len(s))] }

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// inventoryIn says whether the hub holds an inventory of cluster with
// every one of its nodes.
func (h *Harness) inventoryIn(ctx context.Context, cluster string) bool {
	obj, err := h.Hub.Clusters.GetInventory(ctx, &shoalv1.GetClusterRequest{Name: cluster})
	if err != nil {
		return false
	}
	var inv fedinv.Cluster
	return json.Unmarshal(obj.GetJson(), &inv) == nil && len(inv.Nodes) >= h.cfg.Nodes
}

// profile records a CPU profile of the hub for CPUProfile into
// ProfileFile (the hub serves /debug/pprof/ with --profiling) and names
// the file in res, or says why it could not.
func (h *Harness) profile(ctx context.Context, res *Result) {
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", h.Hub.Fleet.Shoal.HTTP, int(h.cfg.CPUProfile.Seconds()))
	err := fetchTo(ctx, url, h.cfg.ProfileFile)
	if err != nil {
		h.Progress("hub CPU profile: %v", err)
		res.CPUProfileError = err.Error()
		return
	}
	h.Progress("hub CPU profile of %s in %s", h.cfg.CPUProfile, h.cfg.ProfileFile)
	res.CPUProfile = h.cfg.ProfileFile
}

// latePlacements are the n slowest placements of the run with what the
// hub holds of their jobs now (what a reader needs to tell a job that
// waited for capacity from one held back by the hub).
func (h *Harness) latePlacements(ctx context.Context, start time.Time, n int) []LatePlacement {
	out := h.tracker.slowest(n)
	for i := range out {
		lp := &out[i]
		lp.SubmittedAtS = lp.submitted.Sub(start).Seconds()
		obj, err := h.Hub.Jobs.Get(ctx, &shoalv1.GetJobRequest{Name: lp.Job})
		if err != nil {
			lp.Error = err.Error()
			continue
		}
		var j v1alpha1.Job
		if err := json.Unmarshal(obj.GetJson(), &j); err != nil {
			lp.Error = err.Error()
			continue
		}
		lp.Members, lp.GPUsPerMember = j.Spec.Gang.Members, j.Spec.Gang.GPUsPerMember
		lp.Priority, lp.Queue = string(j.Spec.PriorityClass), j.Spec.Queue
		lp.Phase, lp.Epoch, lp.Restarts = string(j.Status.Phase), j.Status.Epoch, j.Status.Restarts
		for _, c := range j.Status.Conditions {
			lp.Conditions = append(lp.Conditions, fmt.Sprintf("%s=%s %s at %.1f s: %s", c.Type, c.Status, c.Reason,
				c.LastTransitionTime.Sub(start).Seconds(), c.Message))
		}
		h.Progress("slow placement: %s %.1f s after its submission (%.1f s into the load): %d × %d GPUs, %s, epoch %d, %v",
			lp.Job, lp.Seconds, lp.SubmittedAtS, lp.Members, lp.GPUsPerMember, lp.Phase, lp.Epoch, lp.Conditions)
	}
	return out
}
