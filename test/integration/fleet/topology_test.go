// SPDX-License-Identifier: Apache-2.0

package fleet_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/framework"
)

// TestTopographClusterGetsRackLocalPlacement: a workload cluster whose
// nodes carry only Topograph v1 topology labels (fabric.topograph.run/tier-N,
// no topology.kubernetes.io/rack) and an agent with default flags: the agent
// detects the topograph-v1 preset and the hub's cluster status says so; a
// gang of 8 members x 8 GPUs that requires one rack fills exactly one
// tier-0 (leaf switch) domain. Read without the preset every node would be
// its own rack and the gang could not be placed at all.
func TestTopographClusterGetsRackLocalPlacement(t *testing.T) {
	skipShort(t)
	bins := buildShoal(t)
	f, err := devfleet.Up(t.Context(), devfleet.Options{Dir: t.TempDir(), Clusters: 1, Profiles: []string{"hgx-h100-topograph"},
		Nodes: 16, Out: testWriter{t}, DieWithParent: true, Shoal: bins})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	wl := f.Workloads()[0]
	conn := dialFleetHub(t, f)
	clusters, jobs := shoalv1.NewClustersClient(conn), shoalv1.NewJobsClient(conn)

	var c v1alpha1.Cluster
	waitFor(t, time.Minute, "cluster status names the topograph-v1 preset", func(ctx context.Context) bool {
		o, err := clusters.GetCluster(ctx, &shoalv1.GetClusterRequest{Name: wl.Name})
		if err != nil || json.Unmarshal(o.GetJson(), &c) != nil {
			return false
		}
		inv := c.Status.Inventory
		return inv != nil && inv.Nodes == 16 && inv.Topology != nil && inv.Topology.Preset == fedinv.PresetTopographV1
	})
	if tp := c.Status.Inventory.Topology; tp.Source != fedinv.TopologySourceAuto || tp.RackKey != devfleet.LabelTopographTier0 ||
		tp.BlockKey != devfleet.LabelTopographTier1 || tp.Message != "" {
		t.Errorf("topology status = %+v", tp)
	}

	q, _ := json.Marshal(map[string]any{"apiVersion": v1alpha1.APIVersion, "kind": "Queue", "metadata": map[string]string{"name": "tg"}})
	if _, err := shoalv1.NewQueuesClient(conn).Create(t.Context(), &shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: q}}); err != nil {
		t.Fatal(err)
	}
	job := testjob.New("rack-gang").Queue("tg").Members(8).GPUs(8).
		With(func(j *v1alpha1.Job) { j.Spec.Placement.Topology.Required = v1alpha1.TopologyRack }).Obj()
	job.APIVersion, job.Kind = v1alpha1.APIVersion, "Job"
	b, _ := json.Marshal(job)
	if _, err := jobs.Submit(t.Context(), &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: b}}); err != nil {
		t.Fatal(err)
	}
	var j v1alpha1.Job
	waitFor(t, 2*time.Minute, "job rack-gang Running", func(ctx context.Context) bool {
		o, err := jobs.Get(ctx, &shoalv1.GetJobRequest{Name: job.Name})
		return err == nil && json.Unmarshal(o.GetJson(), &j) == nil && j.Status.Phase == v1alpha1.JobRunning
	})
	cs, err := wl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	racks := map[string]int{}
	for _, p := range pods.Items {
		n, err := cs.CoreV1().Nodes().Get(t.Context(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s on node %q: %v", p.Name, p.Spec.NodeName, err)
		}
		racks[n.Labels[devfleet.LabelTopographTier0]]++
	}
	if len(pods.Items) != 8 || len(racks) != 1 {
		t.Fatalf("%d local pods over tier-0 domains %v, want 8 in one", len(pods.Items), racks)
	}
	for r := range racks {
		if r == "" {
			t.Fatalf("members on nodes without a tier-0 label: %v", racks)
		}
	}
}

func dialFleetHub(t *testing.T, f *devfleet.Fleet) *grpc.ClientConn {
	t.Helper()
	return framework.DialHub(t, f.Shoal.Config, devfleet.ShoalContext)
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func(context.Context) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	for !ok(ctx) {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
