// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

// selectorFleet is three one-node clusters with distinct labels.
func selectorFleet() []inventory.Cluster {
	node := []inventory.Node{{Name: "n0", Product: "H100", GPUs: 8, Ready: true}}
	return []inventory.Cluster{
		{Name: "eu1", Labels: map[string]string{"region": "eu", "tier": "prod"}, Nodes: node},
		{Name: "us1", Labels: map[string]string{"region": "us", "tier": "prod", "spot": "true"}, Nodes: node},
		{Name: "ap1", Labels: map[string]string{"region": "ap"}, Nodes: node},
	}
}

func expr(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestClusterSelectorOperators(t *testing.T) {
	tests := []struct {
		name string
		sel  *metav1.LabelSelector
		want []string
	}{
		{name: "nil selects all", want: []string{"eu1", "us1", "ap1"}},
		{name: "empty selects all", sel: &metav1.LabelSelector{}, want: []string{"eu1", "us1", "ap1"}},
		{name: "matchLabels", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
			want: []string{"eu1", "us1"}},
		{name: "In", sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			expr("region", metav1.LabelSelectorOpIn, "eu", "ap")}}, want: []string{"eu1", "ap1"}},
		{name: "NotIn also selects clusters without the label", sel: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{expr("tier", metav1.LabelSelectorOpNotIn, "prod")}},
			want: []string{"ap1"}},
		{name: "NotIn one region", sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			expr("region", metav1.LabelSelectorOpNotIn, "us")}}, want: []string{"eu1", "ap1"}},
		{name: "Exists", sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			expr("spot", metav1.LabelSelectorOpExists)}}, want: []string{"us1"}},
		{name: "DoesNotExist", sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			expr("spot", metav1.LabelSelectorOpDoesNotExist)}}, want: []string{"eu1", "ap1"}},
		{name: "matchLabels and expressions are ANDed", sel: &metav1.LabelSelector{
			MatchLabels:      map[string]string{"tier": "prod"},
			MatchExpressions: []metav1.LabelSelectorRequirement{expr("spot", metav1.LabelSelectorOpDoesNotExist)}},
			want: []string{"eu1"}},
		{name: "nothing matches", sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			expr("region", metav1.LabelSelectorOpIn, "sa")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGang("a", 1, 8).obj()
			g.ClusterSelector = tt.sel
			s := NewSnapshot(selectorFleet(), nil)
			if err := validate(&g); err != nil {
				t.Fatalf("validate: %v", err)
			}
			r := s.newRequest(&g, params{})
			var got []string
			for i, ok := range r.clusterOK {
				if ok {
					got = append(got, s.clusters[i].name)
				}
			}
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("eligible clusters = %v, want %v", got, want)
			}
		})
	}
}

// TestClusterSelectorNotInKeepsGangOff fills every cluster but the excluded
// one: the gang must wait rather than land where the user said no.
func TestClusterSelectorNotInKeepsGangOff(t *testing.T) {
	fleet := selectorFleet()
	fleet[0].Nodes = []inventory.Node{{Name: "n0", Product: "H100", GPUs: 8, UsedGPUs: 8, Ready: true}}
	fleet[2].Nodes = fleet[0].Nodes
	g := newGang("a", 1, 8).obj()
	g.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		expr("region", metav1.LabelSelectorOpNotIn, "us")}}
	s := NewSnapshot(fleet, nil)
	p, err := s.Place(g)
	var u *Unschedulable
	if !errors.As(err, &u) {
		t.Fatalf("Place = %+v, %v; want Unschedulable (only the excluded us1 has room)", p, err)
	}

	d := Schedule(NewSnapshot(fleet, nil), Input{Pending: []Gang{g}})
	if len(d.Placements) != 0 || len(d.Waiting) != 1 {
		t.Fatalf("Schedule = %+v; want the gang waiting, not on the excluded cluster", d)
	}

	g.ClusterSelector = nil
	if p, err := s.Place(g); err != nil || p.Clusters[0] != "us1" {
		t.Fatalf("without the selector Place = %+v, %v; want us1", p, err)
	}
}

func TestClusterSelectorInvalid(t *testing.T) {
	g := newGang("a", 1, 8).obj()
	g.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		expr("region", metav1.LabelSelectorOpIn)}} // In needs values
	_, err := NewSnapshot(selectorFleet(), nil).Place(g)
	if !errors.Is(err, ErrInvalidGang) {
		t.Fatalf("Place = %v, want ErrInvalidGang", err)
	}
}

// mustSelector is the gang's cluster selector, failing the test when invalid.
func mustSelector(t *testing.T, g *Gang) labels.Selector {
	t.Helper()
	sel, err := clusterSelector(g)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestClusterSelectorMatchesTheClusterName(t *testing.T) {
	g := &Gang{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: v1alpha1.LabelClusterName, Operator: metav1.LabelSelectorOpIn, Values: []string{"west"}}}}}
	sel, err := clusterSelector(g)
	if err != nil {
		t.Fatal(err)
	}
	if !clusterMatches(g, sel, "west", nil) || clusterMatches(g, sel, "east", map[string]string{v1alpha1.LabelClusterName: "west"}) {
		t.Fatalf("%s selects the cluster by its hub name, whatever label it carries", v1alpha1.LabelClusterName)
	}
}
