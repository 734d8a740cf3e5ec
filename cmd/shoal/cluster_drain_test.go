// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func TestSplitClusterNode(t *testing.T) {
	for _, tc := range []struct {
		arg, cluster, node string
		ok                 bool
	}{
		{"h100-1/h100-1-n0003", "h100-1", "h100-1-n0003", true},
		{"h100-1", "", "", false},
		{"/n1", "", "", false},
		{"c/", "", "", false},
		{"c/n/x", "", "", false},
	} {
		c, n, err := splitClusterNode(tc.arg)
		if (err == nil) != tc.ok || c != tc.cluster || n != tc.node {
			t.Errorf("splitClusterNode(%q) = %q, %q, %v", tc.arg, c, n, err)
		}
	}
}

func TestClusterState(t *testing.T) {
	drained := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ClusterConditionDrained, Status: s}}
	}
	for _, tc := range []struct {
		name string
		c    v1alpha1.Cluster
		want string
	}{
		{"ready", v1alpha1.Cluster{Status: v1alpha1.ClusterStatus{State: v1alpha1.ClusterReady}}, "Ready"},
		{"draining", v1alpha1.Cluster{Spec: v1alpha1.ClusterSpec{Drain: true},
			Status: v1alpha1.ClusterStatus{State: v1alpha1.ClusterDraining, Conditions: drained(metav1.ConditionFalse)}}, "Draining (draining)"},
		{"drained", v1alpha1.Cluster{Spec: v1alpha1.ClusterSpec{Drain: true},
			Status: v1alpha1.ClusterStatus{State: v1alpha1.ClusterCordoned, Conditions: drained(metav1.ConditionTrue)}}, "Cordoned (drained)"},
		{"nodes", v1alpha1.Cluster{Spec: v1alpha1.ClusterSpec{DrainedNodes: []string{"a", "b"}},
			Status: v1alpha1.ClusterStatus{State: v1alpha1.ClusterReady, Conditions: drained(metav1.ConditionFalse)}}, "Ready (2 nodes drained)"},
	} {
		if got := clusterState(&tc.c); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
