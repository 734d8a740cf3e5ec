// SPDX-License-Identifier: Apache-2.0

package inventory

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/agent/cluster"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// topographCluster returns a fake workload cluster of the local fleet's
// hgx-h100-topograph profile: 16 Ready HGX nodes in two racks of 8, their
// topology labelled only with Topograph v1 keys, and one pod taking a GPU
// on the first node, so only the second rack has 8 whole free nodes.
func topographCluster(t *testing.T) *fake.Clientset {
	t.Helper()
	p, err := devfleet.LookupProfile("hgx-h100-topograph")
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	nodes := devfleet.BuildNodes("tg1", "local", p, 16)
	for _, n := range nodes {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if _, err := cs.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: nodes[0].Name, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{fedinv.ResourceGPU: *resource.NewQuantity(1, resource.DecimalSI)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if _, err := cs.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cs
}

func watch(t *testing.T, cs *fake.Clientset, topo fedinv.TopologyChoice) fedinv.Cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	c, err := cluster.New(cs)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Run(ctx) }()
	w := NewWatcher(c, "tg1", topo, WithInterval(20*time.Millisecond))
	ch := w.Subscribe()
	go func() { _ = w.Run(ctx) }()
	return next(t, ch, func(c fedinv.Cluster) bool { return len(c.Nodes) == 16 && c.FreeGPUs() == 127 })
}

func rackGang() placement.Gang {
	g := placement.Gang{ID: "g", Members: 8, GPUsPerMember: 8}
	g.Topology.Required = fedinv.LevelRack
	return g
}

// TestTopographClusterGetsRackLocalPlacement: the agent detects the
// topograph-v1 preset on a cluster labelled only with Topograph v1 keys and
// reports it, and the placement engine puts a gang that requires one rack
// into one tier-0 (leaf switch) domain: the one rack with 8 free nodes.
func TestTopographClusterGetsRackLocalPlacement(t *testing.T) {
	inv := watch(t, topographCluster(t), fedinv.TopologyChoice{})
	if inv.Topology == nil || inv.Topology.Source != fedinv.TopologySourceAuto || inv.Topology.Preset != fedinv.PresetTopographV1 ||
		inv.Topology.Keys.Rack != devfleet.LabelTopographTier0 || inv.Topology.Message != "" {
		t.Fatalf("reported topology = %+v, want auto-detected topograph-v1", inv.Topology)
	}
	p, err := placement.NewSnapshot([]fedinv.Cluster{inv}, nil).Place(rackGang())
	if err != nil {
		t.Fatalf("rack-required gang: %v", err)
	}
	if p.Level != fedinv.LevelRack {
		t.Errorf("level = %s, want rack", p.Level)
	}
	if p.Domain != "tg1/rack:tg1-r001" {
		t.Errorf("domain = %q, want tg1/rack:tg1-r001 (the rack with 8 free nodes)", p.Domain)
	}
	racks := map[string]bool{}
	for _, a := range p.Assignments {
		for _, n := range inv.Nodes {
			if n.Name == a.Node {
				racks[n.Rack] = true
			}
		}
	}
	if len(racks) != 1 || !racks["tg1-r001"] || len(p.Assignments) != 8 {
		t.Errorf("assignments %+v span racks %v, want 8 nodes of rack tg1-r001", p.Assignments, racks)
	}
}

// TestTopographClusterUnderGFDKeys: read with the gfd preset's keys, the
// same cluster states no rack; the agent says so, and the rack-required gang
// does not fit, since every node is then a rack of its own. This is what
// detection fixes.
func TestTopographClusterUnderGFDKeys(t *testing.T) {
	inv := watch(t, topographCluster(t), fedinv.TopologyChoice{Preset: fedinv.PresetGFD})
	if inv.Topology == nil || inv.Topology.Preset != fedinv.PresetGFD || inv.Topology.Message == "" {
		t.Fatalf("reported topology = %+v, want gfd with a no-labels message", inv.Topology)
	}
	_, err := placement.NewSnapshot([]fedinv.Cluster{inv}, nil).Place(rackGang())
	var u *placement.Unschedulable
	if !errors.As(err, &u) || u.Reason != placement.ReasonTopology {
		t.Errorf("err = %v, want reason %s", err, placement.ReasonTopology)
	}
}
