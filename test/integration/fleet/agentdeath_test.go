// SPDX-License-Identifier: Apache-2.0

package fleet_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// TestAgentKilled kills one cluster's shoal-agent with SIGKILL: within the
// grace (devfleet.HubNodeMonitorGrace for the virtual nodes, shoal-hub's
// --cluster-grace for the cluster, both 40 s) its virtual nodes must turn
// Ready=Unknown in the hub cluster, through the hub cluster's
// kube-controller-manager, and the cluster NotReady on the hub. The other
// cluster's agent keeps renewing its leases past the grace, so its nodes and
// the cluster stay Ready; the dead cluster's nodes are tainted unreachable but
// nothing evicts pods (no taint eviction controller on the hub).
func TestAgentKilled(t *testing.T) {
	skipShort(t)
	bins := buildShoal(t)
	opts := devfleet.Options{Dir: t.TempDir(), Clusters: 2, Profiles: []string{"hgx-h100", "a100-mig"}, Nodes: 16,
		Out: testWriter{t}, DieWithParent: true, Shoal: bins}
	f, err := devfleet.Up(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	hcs, err := f.Hub().Clientset()
	if err != nil {
		t.Fatal(err)
	}
	dead, alive := f.Workloads()[0].Name, f.Workloads()[1].Name
	agent := agentOf(t, f, dead)

	killed := time.Now()
	if err := syscall.Kill(agent.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	limit := 3 * devfleet.HubNodeMonitorGrace // the grace, plus the monitor period and a slow machine
	var nodesDown, clusterDown time.Duration
	err = pollUntil(t.Context(), limit, func() (bool, error) {
		if nodesDown == 0 {
			ready, total, err := virtualReady(t.Context(), hcs, dead)
			if err != nil || total == 0 {
				return false, err
			}
			if ready == 0 {
				nodesDown = time.Since(killed)
			}
		}
		if clusterDown == 0 {
			states, err := f.ClusterStates(t.Context())
			if err != nil {
				return false, err
			}
			if states[dead] == "NotReady" {
				clusterDown = time.Since(killed)
			}
		}
		return nodesDown > 0 && clusterDown > 0, nil
	})
	t.Logf("agent of %s killed: virtual nodes not Ready after %s, cluster NotReady on the hub after %s",
		dead, nodesDown.Round(100*time.Millisecond), clusterDown.Round(100*time.Millisecond))
	if err != nil {
		t.Fatalf("%s after the agent was killed (nodes down after %s, cluster down after %s): %v",
			limit, nodesDown, clusterDown, err)
	}

	ready, total, err := virtualReady(t.Context(), hcs, alive)
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || ready != total {
		t.Errorf("cluster %s (agent alive): %d of %d virtual nodes Ready, want all", alive, ready, total)
	}
	states, err := f.ClusterStates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if states[alive] != "Ready" {
		t.Errorf("cluster %s (agent alive) is %q on the hub, want Ready", alive, states[alive])
	}
}

// agentOf returns the running shoal-agent of the named workload cluster.
func agentOf(t *testing.T, f *devfleet.Fleet, cluster string) *devfleet.Process {
	t.Helper()
	c := f.Cluster(cluster)
	for i := len(c.Processes) - 1; i >= 0; i-- {
		if p := c.Processes[i]; p.Name == devfleet.AgentProcess && p.Alive() {
			return p
		}
	}
	t.Fatalf("no running %s in cluster %s", devfleet.AgentProcess, cluster)
	return nil
}

// virtualReady counts the hub cluster's virtual nodes of a workload cluster,
// and those of them with Ready=True.
func virtualReady(ctx context.Context, hub kubernetes.Interface, cluster string) (ready, total int, err error) {
	list, err := hub.CoreV1().Nodes().List(ctx, metav1.ListOptions{
		LabelSelector: v1alpha1.VirtualNodeSelector + "," + v1alpha1.LabelCluster + "=" + cluster})
	if err != nil {
		return 0, 0, err
	}
	for i := range list.Items {
		for _, c := range list.Items[i].Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, len(list.Items), nil
}

// pollUntil calls ok every 200 ms until it returns true or an error, or
// timeout passes.
func pollUntil(ctx context.Context, timeout time.Duration, ok func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		done, err := ok()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("condition not met: %w", ctx.Err())
		case <-tick.C:
		}
	}
}
