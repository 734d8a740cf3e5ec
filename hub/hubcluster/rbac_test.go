// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestClusterWideRoleHoldsNoMemberData: the ClusterRole bound cluster-wide
// grants nothing on pods, Secrets, ConfigMaps, Services, EndpointSlices or
// events, and no list or watch of nodes; the member role is bound in the
// cluster's namespace only.
func TestClusterWideRoleHoldsNoMemberData(t *testing.T) {
	for _, r := range clusterRole().Rules {
		for _, res := range r.Resources {
			if slices.Contains([]string{"pods", "pods/status", "secrets", "configmaps", "serviceaccounts", "services",
				"endpointslices", "events", "namespaces"}, res) {
				t.Errorf("cluster-wide rule on %s: %v", res, r.Verbs)
			}
			if res == "nodes" && (slices.Contains(r.Verbs, "list") || slices.Contains(r.Verbs, "watch")) {
				t.Errorf("cluster-wide node %v", r.Verbs)
			}
		}
	}
	b := roleBinding("eu1", v1alpha1.ClusterNamespace("eu1"), "ClusterRole", MemberRoleName)
	if *b.Namespace != "shoal-c-eu1" || *b.RoleRef.Name != MemberRoleName || *b.Subjects[0].Name != ServiceAccountName("eu1") {
		t.Errorf("member binding %s/%s -> %s for %s", *b.Namespace, *b.Name, *b.RoleRef.Name, *b.Subjects[0].Name)
	}
}

// TestClusterNamespaceAlwaysValid: every name validCluster accepts makes
// a valid namespace.
func TestClusterNamespaceAlwaysValid(t *testing.T) {
	for _, c := range []string{"a", "eu1", "a-b", strings.Repeat("x", 51)} {
		if err := validCluster(c); err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		if errs := validation.IsDNS1123Label(v1alpha1.ClusterNamespace(c)); len(errs) > 0 {
			t.Errorf("namespace of %q: %v", c, errs)
		}
	}
	if validCluster(strings.Repeat("x", 52)) == nil {
		t.Error("a 52-character name accepted")
	}
}
