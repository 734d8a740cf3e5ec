// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"strings"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestUnhealthyRevisionIsDegraded applies a Deployment that never becomes
// available (the test control plane runs no controllers): the revision is
// applied, the health wait times out, and the status says Degraded with
// HealthCheckFailed – what a rollout treats as a failed wave.
func TestUnhealthyRevisionIsDegraded(t *testing.T) {
	integration(t)
	a := newAgent(t, true)
	repo := newRepo(t, map[string]string{"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + a.ns + `-web
  namespace: default
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`})
	src := source(repo, "")
	src.HealthTimeout = &metav1.Duration{Duration: 2 * time.Second}
	st, err := a.sync(t, src)
	if err == nil {
		t.Fatal("sync of a never-ready Deployment succeeded")
	}
	wantReason(t, st, v1alpha1.GitOpsReasonHealthCheckFailed, false)
	if st.Health != v1alpha1.GitOpsHealthDegraded || !strings.Contains(st.HealthMessage, "web") {
		t.Fatalf("health %s %q, want Degraded naming the Deployment", st.Health, st.HealthMessage)
	}
	t.Logf("health message: %s", st.HealthMessage)
	if !v1alpha1.SameCommit(st.AppliedCommit, repo.head(t)) || st.InventorySize != 1 {
		t.Fatalf("applied %s inventory %d; the revision itself was applied", st.AppliedCommit, st.InventorySize)
	}
}
