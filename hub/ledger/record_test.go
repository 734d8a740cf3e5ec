// SPDX-License-Identifier: Apache-2.0

package ledger

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/federation/placement"
)

// legacyGang is the gang of testdata/reservation-legacy.json, a reservation
// as hubs stored it while Reservation embedded placement.Gang and
// []placement.Assignment.
func legacyGang() placement.Gang {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return placement.Gang{ID: "llama", Queue: "research/nlp", Priority: 1000, Preemptible: true,
		GracePeriod: 30 * time.Second, Members: 2, GPUsPerMember: 4, MIGResource: "nvidia.com/mig-1g.10gb",
		Products: []string{"H100"}, ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, Clusters: []string{"eu1"},
		Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Topology:    placement.Topology{Required: "rack", Preferred: "node"}, MaxClusters: 1, Policy: placement.Spread,
		Submitted: at, Estimate: time.Hour}
}

// TestLegacyReservation: a record written before the ledger had its own
// types reads into the same gang and assignments, and writing it again
// gives the same bytes.
func TestLegacyReservation(t *testing.T) {
	old, err := os.ReadFile("testdata/reservation-legacy.json")
	if err != nil {
		t.Fatal(err)
	}
	old = bytes.TrimSpace(old)
	var r Reservation
	if err := json.Unmarshal(old, &r); err != nil {
		t.Fatal(err)
	}
	if got, want := r.PlacementGang(), legacyGang(); !reflect.DeepEqual(got, want) {
		t.Errorf("gang:\n got %+v\nwant %+v", got, want)
	}
	if got, want := r.PlacementAssignments(), []placement.Assignment{{Cluster: "eu1", Node: "n1", Members: 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("assignments = %+v, want %+v", got, want)
	}
	if r.Gang.GPUs() != 8 {
		t.Errorf("GPUs = %d, want 8", r.Gang.GPUs())
	}
	again, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, old) {
		t.Errorf("stored form changed:\n got %s\nwant %s", again, old)
	}
}

// expressionGang is legacyGang with a selector that has matchExpressions.
func expressionGang() placement.Gang {
	g := legacyGang()
	g.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu", "us"}},
			{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"spot"}},
			{Key: "gpu", Operator: metav1.LabelSelectorOpExists},
			{Key: "cordoned", Operator: metav1.LabelSelectorOpDoesNotExist},
		}}
	return g
}

// TestSelectorStored: a selector with matchExpressions survives the stored
// form through JSON, and the matchLabels are also written where an earlier
// hub reads them.
func TestSelectorStored(t *testing.T) {
	g := expressionGang()
	b, err := json.Marshal(&Reservation{Gang: GangOf(g)})
	if err != nil {
		t.Fatal(err)
	}
	var r Reservation
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if got := r.PlacementGang(); !reflect.DeepEqual(got, g) {
		t.Errorf("gang after JSON:\n got %+v\nwant %+v", got.ClusterSelector, g.ClusterSelector)
	}
	var old struct {
		Gang struct{ ClusterSelector map[string]string } `json:"gang"`
	}
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(old.Gang.ClusterSelector, map[string]string{"env": "prod"}) {
		t.Errorf("legacy ClusterSelector = %v, want the matchLabels", old.Gang.ClusterSelector)
	}
}

func TestGangRoundTrip(t *testing.T) {
	shared := legacyGang()
	shared.Shared = &placement.SharedRequest{Strategy: "mps"}
	for _, g := range []placement.Gang{{}, legacyGang(), expressionGang(), shared} {
		if got := GangOf(g).Placement(); !reflect.DeepEqual(got, g) {
			t.Errorf("round trip of %+v = %+v", g, got)
		}
	}
	as := []placement.Assignment{{Cluster: "a", Node: "n1", Members: 1}, {Cluster: "b", Node: "n2", Members: 3}}
	r := &Reservation{Assignments: AssignmentsOf(as)}
	if got := r.PlacementAssignments(); !reflect.DeepEqual(got, as) {
		t.Errorf("assignments round trip = %+v", got)
	}
	if AssignmentsOf(nil) != nil || (&Reservation{}).PlacementAssignments() != nil {
		t.Error("nil assignments did not stay nil")
	}
}
