// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/registry"
)

// hubClusterReason is cluster name's HubClusterReachable condition as
// "Status/Reason" ("" while it has none).
func hubClusterReason(ctx context.Context, name string) (string, *v1alpha1.Cluster, error) {
	c, _, err := h.reg.GetCluster(ctx, name)
	if err != nil {
		return "", nil, err
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ClusterConditionHubClusterReachable); cond != nil {
		return string(cond.Status) + "/" + cond.Reason, c, nil
	}
	return "", c, nil
}

// TestHalfCutAgentFencesBeforeNextEpoch: a gang spans two clusters; only
// the link of one agent to the hub cluster is cut (its kube proxy
// freezes), while its gRPC heartbeats still arrive. A member on the other,
// healthy cluster fails at once. The cut agent no longer sees its members'
// deletion, so its heartbeats must no longer count: it fences itself after
// its fence timeout, the cluster stays Ready but says its agent cannot
// reach the hub cluster, and the hub force-deletes the hanging member, and
// starts the next epoch, only once no heartbeat said the hub cluster was
// reachable for the fence timeout plus the margin. Sampled every 200 ms,
// no two epochs ever run at once, and the next epoch runs only after the
// cut agent fenced. When the cut heals nothing of the old epoch is left on
// the cut cluster.
func TestHalfCutAgentFencesBeforeNextEpoch(t *testing.T) {
	skipShort(t)
	cut, _, kube := cutAgent(t)
	healthy, third := clusterNames[0], clusterNames[1]
	// As in TestPartitionedAgentRestartOnHealthySideWaitsForFence: with the
	// third cluster cordoned the gang spans the healthy and the cut cluster.
	setCordon(t, []string{third}, true)
	name := "partition-halfcut"
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
	kube.Freeze() // the gRPC link (api) stays up
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
	eventually(t, v1alpha1.HubClusterContactWindow+10*time.Second, "the hub told the agent cannot reach the hub cluster", func(ctx context.Context) (bool, error) {
		r, c, err := hubClusterReason(ctx, cut)
		return err == nil && r == "False/"+v1alpha1.ReasonHubClusterUnreachable && c.Status.State == v1alpha1.ClusterReady,
			fmt.Errorf("condition %q (%v)", r, err)
	})
	told := time.Since(start)
	eventually(t, agentFenceTimeout+v1alpha1.HubClusterContactWindow+15*time.Second, "the half-cut agent fences its members", func(ctx context.Context) (bool, error) {
		rc, err := runningClusters(ctx, name)
		return err == nil && rc[cut] == 0, fmt.Errorf("running: %v (%v)", rc, err)
	})
	fenced := time.Since(start)
	within := hubFenceTimeout + registry.DefaultFenceMargin + 60*time.Second
	var running time.Duration
	var runningAt time.Time
	eventually(t, within, "the next epoch running", func(ctx context.Context) (bool, error) {
		j = getJob(t, name)
		if j.Status.Phase != v1alpha1.JobRunning || j.Status.Epoch <= epoch {
			return false, fmt.Errorf("phase %s epoch %d", j.Status.Phase, j.Status.Epoch)
		}
		runningAt = time.Now()
		running = runningAt.Sub(start)
		return true, nil
	})
	time.Sleep(time.Second) // keep sampling the new epoch a while
	scancel()
	<-sampled

	reason, c, err := hubClusterReason(t.Context(), cut)
	if err != nil {
		t.Fatal(err)
	}
	sampler.mu.Lock()
	defer sampler.mu.Unlock()
	t.Logf("half cut (hub cluster only) of %s with a member failure on %s: restart decided after %s; hub told HubClusterUnreachable after %s; agent fenced after %s; epoch %d Running on %v after %s (restarts %d); cluster %s, %s; last heartbeat with the hub cluster %s after the cut; duplicate-run window %s over %d samples (%d errors)",
		cut, healthy, decided.Round(10*time.Millisecond), told.Round(10*time.Millisecond), fenced.Round(10*time.Millisecond),
		j.Status.Epoch, j.Status.Placement.Clusters, running.Round(10*time.Millisecond), j.Status.Restarts, c.Status.State, reason,
		c.Status.LastHubClusterContact.Sub(start).Round(10*time.Millisecond), sampler.overlap, sampler.samples, sampler.errs)
	if sampler.overlap != 0 {
		t.Errorf("two epochs ran at once for %s (last: %v)", sampler.overlap, sampler.worst)
	}
	if sampler.samples-sampler.errs < int(running/time.Second) {
		t.Errorf("only %d good samples over %s", sampler.samples-sampler.errs, running)
	}
	if running <= fenced {
		t.Errorf("next epoch running after %s, not after the half-cut agent fenced (%s)", running, fenced)
	}
	if c.Status.State != v1alpha1.ClusterReady || reason != "False/"+v1alpha1.ReasonHubClusterFenced {
		t.Errorf("half-cut cluster %s is %s with HubClusterReachable %q when the next epoch ran, want Ready and %s",
			cut, c.Status.State, reason, v1alpha1.ReasonHubClusterFenced)
	}
	if wait := c.Status.LastHubClusterContact.Add(hubFenceTimeout + registry.DefaultFenceMargin); runningAt.Before(wait) {
		t.Errorf("next epoch running at %s, before the last heartbeat with the hub cluster (%s) plus the fence timeout and margin",
			runningAt.Format(time.RFC3339Nano), c.Status.LastHubClusterContact.Format(time.RFC3339))
	}
	if j.Status.Restarts != restarts+1 {
		t.Errorf("restarts %d, want %d (the member failure)", j.Status.Restarts, restarts+1)
	}
	for _, m := range j.Status.Members {
		if m.Cluster == cut {
			t.Errorf("member %d of the next epoch on the half-cut cluster %s", m.Index, cut)
		}
	}

	// Heal: the hub cluster is reachable again and nothing of the old epoch
	// is left on the cut cluster.
	kube.Thaw()
	eventually(t, 30*time.Second, "the hub told the agent reaches the hub cluster again", func(ctx context.Context) (bool, error) {
		r, _, err := hubClusterReason(ctx, cut)
		return err == nil && r == "True/"+v1alpha1.ReasonHubClusterReachable, fmt.Errorf("condition %q (%v)", r, err)
	})
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
