// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// manyConfigMaps is a repository with a Namespace and n ConfigMaps in it.
func manyConfigMaps(ns string, n int) map[string]string {
	var b strings.Builder
	b.WriteString(nsYAML(ns))
	for i := range n {
		b.WriteString(cmYAML(ns, fmt.Sprintf("cm-%04d", i), map[string]string{"index": fmt.Sprint(i), "payload": "gpu-settings"}))
	}
	return map[string]string{"objects.yaml": b.String()}
}

// resourceVersions returns name → resourceVersion of every ConfigMap in ns,
// plus the Namespace itself and the inventory ConfigMap of the agent.
func resourceVersions(t testing.TB, ns, agentNS string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	var list corev1.ConfigMapList
	if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	var n corev1.Namespace
	if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
		t.Fatal(err)
	}
	out["namespace/"+ns] = n.ResourceVersion
	var inv corev1.ConfigMap
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: "gitops-inventory"}, &inv); err != nil {
		t.Fatal(err)
	}
	out["inventory"] = inv.ResourceVersion
	return out
}

// TestNoOpSyncWritesNothing syncs 100 objects, then syncs the same revision
// again: every resourceVersion (objects, namespace, inventory) is unchanged.
func TestNoOpSyncWritesNothing(t *testing.T) {
	integration(t)
	a := newAgent(t, true)
	ns := a.ns + "-many"
	repo := newRepo(t, manyConfigMaps(ns, 100))
	src := source(repo, "")
	if st := a.syncOK(t, src); st.InventorySize != 101 {
		t.Fatalf("inventory %d, want 101", st.InventorySize)
	}
	before := resourceVersions(t, ns, a.ns)
	if len(before) < 102 { // 100 ConfigMaps, the namespace, the inventory
		t.Fatalf("found %d objects, want at least 102", len(before))
	}
	// Every status the re-sync reports keeps the health the revision had:
	// a rollout's soak gate reads it, and a healthy cluster must not leave
	// the gate because its agent re-applied what it had applied.
	var seen []v1alpha1.GitOpsHealth
	a.syncer.SetOnStatus(func(st v1alpha1.GitOpsStatus) { seen = append(seen, st.Health) })
	start := time.Now()
	st := a.syncOK(t, src)
	a.syncer.SetOnStatus(nil)
	for i, h := range seen {
		if h != v1alpha1.GitOpsHealthHealthy {
			t.Errorf("status %d of the no-op re-sync reported health %s, want %s throughout", i, h, v1alpha1.GitOpsHealthHealthy)
		}
	}
	if len(seen) == 0 {
		t.Error("the re-sync reported no status")
	}
	t.Logf("no-op re-sync of %d objects took %s", st.InventorySize, time.Since(start))
	after := resourceVersions(t, ns, a.ns)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: resourceVersion %s -> %s after a no-op sync", k, v, after[k])
		}
	}
	if len(st.Drifted) != 0 {
		t.Errorf("no-op sync reported drift: %v", st.Drifted)
	}
}
