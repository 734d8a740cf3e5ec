// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/registry"
)

// agentFenceTimeout is the partitioned agent's fence timeout: shorter than
// the hub's, as the fence requires.
const agentFenceTimeout = 5 * time.Second

// runningClusters samples which workload clusters run a local pod of job
// (phase Running, terminating or not: the strictest count).
func runningClusters(ctx context.Context, job string) (map[string]int, error) {
	local, err := localPods(ctx, job)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for c, ps := range local {
		for _, p := range ps {
			if p.Status.Phase == corev1.PodRunning {
				out[c]++
			}
		}
	}
	return out, nil
}

// overlapSampler samples runningClusters every 200 ms (run) and adds up
// the time during which a member ran in two clusters at once; watchLost
// follows the job for the cluster-loss decision.
type overlapSampler struct {
	mu      sync.Mutex
	overlap time.Duration
	samples int
	worst   map[string]int
	errs    int
	// lostSeen is the first ClusterLost decision seen on the job
	// (Dispatched or Placed condition), "" while none.
	lostSeen string
}

func (o *overlapSampler) run(ctx context.Context, job string) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			rc, err := runningClusters(ctx, job)
			o.mu.Lock()
			o.samples++
			switch {
			case err != nil:
				o.errs++
			case len(rc) > 1:
				o.overlap += now.Sub(last)
				o.worst = rc
			}
			o.mu.Unlock()
			last = now
		}
	}
}

// watchLost records in o the first version of job whose conditions name a
// cluster loss, from the job's watch, until ctx ends.
func (o *overlapSampler) watchLost(ctx context.Context, job string) {
	for ev := range h.jobs.Watch(ctx, 0, job) {
		if ev.Job == nil {
			continue
		}
		if msg := lostDecision(ev.Job); msg != "" {
			o.mu.Lock()
			if o.lostSeen == "" {
				o.lostSeen = msg
			}
			o.mu.Unlock()
		}
	}
}

// lostDecision returns the message of the job's Dispatched or Placed
// condition when it names a cluster loss, else "".
func lostDecision(j *v1alpha1.Job) string {
	if c := condition(j, v1alpha1.JobConditionDispatched); c != nil && strings.HasPrefix(c.Message, v1alpha1.ReasonClusterLost+": ") {
		return c.Message
	}
	if c := condition(j, v1alpha1.JobConditionPlaced); c != nil && c.Reason == v1alpha1.ReasonClusterLost {
		return c.Message
	}
	return ""
}

// TestPartitionedAgentFencesAndGangMovesWithoutOverlap cuts one agent off
// from the hub (its gRPC API and the hub cluster alike) by freezing the
// loopback proxies its connections go through, without killing it: the
// agent fences itself after its fence timeout (its members are deleted),
// the hub counts the cluster Lost after its fence timeout plus the margin
// and reschedules the gang (onClusterLoss: Reschedule) on another cluster;
// sampled every 200 ms, the gang never runs in two clusters at once. A
// second gang with runPolicy AtLeastOnce moves as soon as the cluster is
// NotReady, before the hub's fence timeout. When
// the cut heals the cluster turns Ready and nothing of the old epoch is
// left on it.
func TestPartitionedAgentFencesAndGangMovesWithoutOverlap(t *testing.T) {
	skipShort(t)
	cut, api, kube := cutAgent(t)

	// Place the gang on the cluster to cut: cordon the others meanwhile.
	var others []string
	for _, c := range clusterNames {
		if c != cut {
			others = append(others, c)
		}
	}
	setCordon(t, others, true)
	name := "partition"
	alo := "partition-alo" // runPolicy AtLeastOnce: may move before the fence
	submit(t, newJob(name, "e2e", 2, 8))
	submit(t, newJob(alo, "e2e", 2, 8, func(j *v1alpha1.Job) { j.Spec.RunPolicy = v1alpha1.AtLeastOnce }))
	j := waitPhase(t, name, v1alpha1.JobRunning, time.Minute)
	aj := waitPhase(t, alo, v1alpha1.JobRunning, time.Minute)
	setCordon(t, others, false)
	for _, m := range append(j.Status.Members, aj.Status.Members...) {
		if m.Cluster != cut {
			t.Fatalf("member %d on %s, want %s", m.Index, m.Cluster, cut)
		}
	}
	epoch, aloEpoch := j.Status.Epoch, aj.Status.Epoch

	sctx, scancel := context.WithCancel(t.Context())
	sampler := &overlapSampler{}
	sampled := make(chan struct{})
	go func() { sampler.run(sctx, name); close(sampled) }()
	watched := make(chan struct{})
	go func() { sampler.watchLost(sctx, name); close(watched) }()

	start := time.Now()
	api.Freeze()
	kube.Freeze()
	eventually(t, agentFenceTimeout+15*time.Second, "the cut-off agent fences its members", func(ctx context.Context) (bool, error) {
		rc, err := runningClusters(ctx, name)
		return err == nil && rc[cut] == 0, fmt.Errorf("running: %v (%v)", rc, err)
	})
	fenced := time.Since(start)
	eventually(t, hubFenceTimeout, "the AtLeastOnce gang running on another cluster before the fence", func(ctx context.Context) (bool, error) {
		aj = getJob(t, alo)
		if aj.Status.Phase != v1alpha1.JobRunning || aj.Status.Epoch <= aloEpoch {
			return false, fmt.Errorf("phase %s epoch %d", aj.Status.Phase, aj.Status.Epoch)
		}
		rc, err := runningClusters(ctx, alo)
		return err == nil && len(rc) == 1 && rc[cut] == 0, fmt.Errorf("running: %v (%v)", rc, err)
	})
	aloMoved := time.Since(start)
	lostWithin := hubFenceTimeout + registry.DefaultFenceMargin + 30*time.Second
	eventually(t, lostWithin, "the gang running on another cluster", func(ctx context.Context) (bool, error) {
		j = getJob(t, name)
		if j.Status.Phase != v1alpha1.JobRunning || j.Status.Epoch <= epoch {
			return false, fmt.Errorf("phase %s epoch %d", j.Status.Phase, j.Status.Epoch)
		}
		rc, err := runningClusters(ctx, name)
		return err == nil && len(rc) == 1 && rc[cut] == 0, fmt.Errorf("running: %v (%v)", rc, err)
	})
	moved := time.Since(start)
	time.Sleep(time.Second) // keep sampling the new epoch a while
	scancel()
	<-sampled
	<-watched

	c, _, err := h.reg.GetCluster(t.Context(), cut)
	if err != nil {
		t.Fatal(err)
	}
	sampler.mu.Lock()
	defer sampler.mu.Unlock()
	t.Logf("AtLeastOnce gang Running again on %v after %s (epoch %d, restarts %d)",
		aj.Status.Placement.Clusters, aloMoved.Round(10*time.Millisecond), aj.Status.Epoch, aj.Status.Restarts)
	t.Logf("partition of %s: agent fenced after %s; gang Running again on %v after %s (epoch %d, restarts %d); cluster %s; duplicate-run window %s over %d samples (%d errors); decision %q",
		cut, fenced.Round(10*time.Millisecond), j.Status.Placement.Clusters, moved.Round(10*time.Millisecond),
		j.Status.Epoch, j.Status.Restarts, c.Status.State, sampler.overlap, sampler.samples, sampler.errs, sampler.lostSeen)
	if sampler.overlap != 0 {
		t.Errorf("the gang ran in two clusters at once for %s (last: %v)", sampler.overlap, sampler.worst)
	}
	if sampler.samples-sampler.errs < int(moved/time.Second) {
		t.Errorf("only %d good samples over %s", sampler.samples-sampler.errs, moved)
	}
	if c.Status.State != v1alpha1.ClusterLost {
		t.Errorf("cut-off cluster %s is %s, want Lost", cut, c.Status.State)
	}
	// The hub's and the agent's clocks both run from the agent's last
	// heartbeat, which came up to a heartbeat interval before the cut.
	if c.Status.LastHeartbeat == nil {
		t.Errorf("cut-off cluster %s has no last heartbeat", cut)
	} else if after := start.Add(moved).Sub(c.Status.LastHeartbeat.Time); after < hubFenceTimeout+registry.DefaultFenceMargin {
		t.Errorf("rescheduled %s after the cluster's last heartbeat, before the hub's fence timeout plus margin %s", after, hubFenceTimeout+registry.DefaultFenceMargin)
	}
	if j.Status.Restarts != 0 || j.Annotations[v1alpha1.AnnotationAborts] != "" {
		t.Errorf("a cluster loss counted: restarts %d, aborts %q", j.Status.Restarts, j.Annotations[v1alpha1.AnnotationAborts])
	}
	if !strings.Contains(sampler.lostSeen, cut) {
		t.Errorf("the job's conditions never named the loss of %s (seen %q)", cut, sampler.lostSeen)
	}

	// Heal: the cluster returns and nothing of the old epoch runs there.
	api.Thaw()
	kube.Thaw()
	waitClusterReady(t, cut)
	eventually(t, 30*time.Second, "nothing of the old epoch on the healed cluster", func(ctx context.Context) (bool, error) {
		local, err := localPods(ctx, name)
		return err == nil && len(local[cut]) == 0, fmt.Errorf("%d local pods on %s (%v)", len(local[cut]), cut, err)
	})
}

// cutAgent restarts the agent of the last cluster with its gRPC and
// hub-cluster connections through loopback proxies the test can freeze,
// and a fence timeout of agentFenceTimeout; when the test ends the cluster
// gets the suite's direct agent back. It returns the cluster and the two
// proxies, once the cluster is Ready.
func cutAgent(t *testing.T) (cut string, api, kube *freezer) {
	t.Helper()
	cut = clusterNames[len(clusterNames)-1]
	hubURL, err := url.Parse(h.hubRC.Host)
	if err != nil {
		t.Fatal(err)
	}
	api, kube = newFreezer(t, h.addr), newFreezer(t, hubURL.Host)
	agentStops[cut]()
	restarted := time.Now()
	stop, err := h.startAgent(hubCtx, cut, agentConfigs[cut], func(c *agent.Config) {
		c.HubAddress, c.HubClusterDial, c.FenceTimeout = api.Addr(), kube.Dial, agentFenceTimeout
	})
	if err != nil {
		t.Fatal(err)
	}
	agentStops[cut] = stop
	// Registered after the proxies, so run before they close: the cluster
	// gets the suite's direct agent back for the tests that follow.
	t.Cleanup(func() {
		api.Thaw()
		kube.Thaw()
		agentStops[cut]()
		stop, err := h.startAgent(hubCtx, cut, agentConfigs[cut])
		if err != nil {
			t.Errorf("restart the agent of %s: %v", cut, err)
			return
		}
		agentStops[cut] = stop
		if err := clusterReady(context.Background(), cut); err != nil {
			t.Error(err)
		}
	})
	waitClusterReady(t, cut)
	// Ready was the old agent's state: a member placed before the new agent
	// reached the hub is refused by its fence ("has not reached the hub
	// since it started") and aborts the dispatch. Wait for its heartbeat.
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		c, _, err := h.reg.GetCluster(ctx, cut)
		return err == nil && c.Status.LastHeartbeat != nil && c.Status.LastHeartbeat.After(restarted), nil
	})
	if err != nil {
		t.Fatalf("no heartbeat of the restarted agent of %s: %v", cut, err)
	}
	return cut, api, kube
}

// waitClusterReady waits until cluster name is Ready.
func waitClusterReady(t *testing.T, name string) {
	t.Helper()
	if err := clusterReady(t.Context(), name); err != nil {
		t.Fatal(err)
	}
}

// clusterReady waits up to 2 minutes until cluster name is Ready.
func clusterReady(ctx context.Context, name string) error {
	var state v1alpha1.ClusterState
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		c, _, err := h.reg.GetCluster(ctx, name)
		if err != nil {
			return false, nil
		}
		state = c.Status.State
		return state == v1alpha1.ClusterReady, nil
	})
	if err != nil {
		return fmt.Errorf("cluster %s not Ready within 2m (state %s): %w", name, state, err)
	}
	return nil
}

// setCordon cordons or uncordons clusters (uncordoned again at the end).
func setCordon(t *testing.T, clusters []string, on bool) {
	t.Helper()
	for _, c := range clusters {
		if _, _, err := h.reg.Cordon(context.WithoutCancel(t.Context()), c, on); err != nil {
			t.Fatal(err)
		}
		if on {
			c := c
			t.Cleanup(func() { _, _, _ = h.reg.Cordon(context.WithoutCancel(t.Context()), c, false) })
		}
	}
}
