// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/registry"
)

// epochSampler samples every 200 ms the epochs of job whose local pods run
// (phase Running, terminating or not) in any workload cluster, and adds up
// the time during which two epochs ran at once: the gang's duplicate-run
// window, which holds for a gang spanning clusters too.
type epochSampler struct {
	mu      sync.Mutex
	overlap time.Duration
	samples int
	errs    int
	worst   map[string]int // epoch -> running local pods, at the last overlap
}

func (o *epochSampler) run(ctx context.Context, job string) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			local, err := localPods(ctx, job)
			epochs := map[string]int{}
			for _, ps := range local {
				for _, p := range ps {
					if p.Status.Phase == corev1.PodRunning {
						epochs[p.Annotations[v1alpha1.AnnotationEpoch]]++
					}
				}
			}
			o.mu.Lock()
			o.samples++
			switch {
			case err != nil:
				o.errs++
			case len(epochs) > 1:
				o.overlap += now.Sub(last)
				o.worst = epochs
			}
			o.mu.Unlock()
			last = now
		}
	}
}

// TestPartitionedAgentRestartOnHealthySideWaitsForFence: a gang spans two
// clusters; one agent is cut off from the hub (its proxies freeze), and a
// member on the other, healthy cluster fails at once. The whole-gang
// restart must not start the next epoch while the cut agent may still run
// the old members: the hub waits until that cluster is Lost (its fence has
// expired), the agent fences itself after its own timeout, and sampled
// every 200 ms no two epochs ever run at once. When the cut heals nothing
// of the old epoch is left on the cut cluster.
func TestPartitionedAgentRestartOnHealthySideWaitsForFence(t *testing.T) {
	skipShort(t)
	cut, api, kube := cutAgent(t)
	healthy, third := clusterNames[0], clusterNames[1]
	// 17 members of 8 GPUs do not fit one cluster of 128: with the third
	// cluster cordoned the gang spans the healthy and the cut cluster.
	setCordon(t, []string{third}, true)
	name := "partition-restart"
	submit(t, newJob(name, "e2e", 17, 8, func(j *v1alpha1.Job) { j.Spec.Placement.MaxClusters = 2 }))
	t.Cleanup(func() { cancelAndWaitGone(t, name) })
	j := waitPhase(t, name, v1alpha1.JobRunning, 2*time.Minute)
	setCordon(t, []string{third}, false) // the next epoch goes to healthy and third
	onCut := 0
	for _, m := range j.Status.Members {
		if m.Cluster == cut {
			onCut++
		}
	}
	if onCut == 0 || onCut == len(j.Status.Members) {
		t.Fatalf("%d of %d members on %s, want the gang on %s and %s", onCut, len(j.Status.Members), cut, healthy, cut)
	}
	epoch := j.Status.Epoch
	restarts := j.Status.Restarts

	sctx, scancel := context.WithCancel(t.Context())
	sampler := &epochSampler{}
	sampled := make(chan struct{})
	go func() { sampler.run(sctx, name); close(sampled) }()

	start := time.Now()
	api.Freeze()
	kube.Freeze()
	// A member on the healthy side fails: its local pod is deleted behind
	// the agent's back.
	local, err := localPods(t.Context(), name)
	if err != nil || len(local[healthy]) == 0 {
		t.Fatalf("local pods on %s: %v (%v)", healthy, local[healthy], err)
	}
	if err := workloads[healthy].CoreV1().Pods(local[healthy][0].Namespace).Delete(t.Context(), local[healthy][0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the restart decided", func(ctx context.Context) (bool, error) {
		d := getJob(t, name).Status.Dispatch
		return d != nil && d.Epoch == epoch && d.Phase == v1alpha1.DispatchRestarting, fmt.Errorf("dispatch %+v", d)
	})
	decided := time.Since(start)
	eventually(t, agentFenceTimeout+15*time.Second, "the cut-off agent fences its members", func(ctx context.Context) (bool, error) {
		rc, err := runningClusters(ctx, name)
		return err == nil && rc[cut] == 0, fmt.Errorf("running: %v (%v)", rc, err)
	})
	fenced := time.Since(start)
	within := hubFenceTimeout + registry.DefaultFenceMargin + 60*time.Second
	var running time.Duration
	eventually(t, within, "the next epoch running", func(ctx context.Context) (bool, error) {
		j = getJob(t, name)
		if j.Status.Phase != v1alpha1.JobRunning || j.Status.Epoch <= epoch {
			return false, fmt.Errorf("phase %s epoch %d", j.Status.Phase, j.Status.Epoch)
		}
		running = time.Since(start)
		return true, nil
	})
	time.Sleep(time.Second) // keep sampling the new epoch a while
	scancel()
	<-sampled

	c, _, err := h.reg.GetCluster(t.Context(), cut)
	if err != nil {
		t.Fatal(err)
	}
	sampler.mu.Lock()
	defer sampler.mu.Unlock()
	t.Logf("cut of %s with a member failure on %s: restart decided after %s; agent fenced after %s; epoch %d Running on %v after %s (restarts %d); cluster %s; duplicate-run window %s over %d samples (%d errors)",
		cut, healthy, decided.Round(10*time.Millisecond), fenced.Round(10*time.Millisecond), j.Status.Epoch,
		j.Status.Placement.Clusters, running.Round(10*time.Millisecond), j.Status.Restarts, c.Status.State,
		sampler.overlap, sampler.samples, sampler.errs)
	if sampler.overlap != 0 {
		t.Errorf("two epochs ran at once for %s (last: %v)", sampler.overlap, sampler.worst)
	}
	if sampler.samples-sampler.errs < int(running/time.Second) {
		t.Errorf("only %d good samples over %s", sampler.samples-sampler.errs, running)
	}
	if c.Status.State != v1alpha1.ClusterLost {
		t.Errorf("cut-off cluster %s is %s when the next epoch ran, want Lost", cut, c.Status.State)
	}
	// The hub's and the agent's clocks both run from the agent's last
	// heartbeat, which came up to a heartbeat interval before the cut.
	if c.Status.LastHeartbeat == nil {
		t.Errorf("cut-off cluster %s has no last heartbeat", cut)
	} else if after := start.Add(running).Sub(c.Status.LastHeartbeat.Time); after < hubFenceTimeout+registry.DefaultFenceMargin {
		t.Errorf("next epoch running %s after the cluster's last heartbeat, before the hub's fence timeout plus margin %s", after, hubFenceTimeout+registry.DefaultFenceMargin)
	}
	if j.Status.Restarts != restarts+1 {
		t.Errorf("restarts %d, want %d (the member failure)", j.Status.Restarts, restarts+1)
	}
	for _, m := range j.Status.Members {
		if m.Cluster == cut {
			t.Errorf("member %d of the next epoch on the Lost cluster %s", m.Index, cut)
		}
	}

	// Heal: the cluster returns and nothing of the old epoch is left there.
	api.Thaw()
	kube.Thaw()
	waitClusterReady(t, cut)
	old := strconv.FormatInt(epoch, 10)
	eventually(t, 30*time.Second, "nothing of the old epoch on the healed cluster", func(ctx context.Context) (bool, error) {
		local, err := localPods(ctx, name)
		if err != nil {
			return false, err
		}
		n := 0
		for _, p := range local[cut] {
			if p.Annotations[v1alpha1.AnnotationEpoch] == old {
				n++
			}
		}
		return n == 0, fmt.Errorf("%d local pods of epoch %s on %s", n, old, cut)
	})
}
