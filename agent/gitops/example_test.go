// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	"context"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"time"

	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/agent/gitops"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// The agent hosts one Syncer: it sets the source the hub assigned, runs the
// loop, and forwards every status to the hub.
func Example() {
	ctx := context.TODO()                  // the agent's lifetime
	var cfg *rest.Config                   // the workload cluster
	var report func(v1alpha1.GitOpsStatus) // sends each status to the hub
	s, err := gitops.New(cfg, gitops.Options{
		Namespace: "shoal-system",
		WorkDir:   "/var/lib/shoal/gitops",
		OnStatus:  report,
	})
	if err != nil {
		return
	}
	_ = s.SetSource(v1alpha1.GitOpsSource{
		URL:       "https://git.example.com/platform/fleet.git",
		Ref:       v1alpha1.GitOpsRef{Branch: "main"},
		Path:      "clusters/eu1",
		Interval:  &metav1.Duration{Duration: 5 * time.Minute},
		SecretRef: "fleet-git-credentials",
		Prune:     true,
	})
	go func() { _ = s.Run(ctx) }()
	// A hub rollout pins a commit; a rollback pins the previous one:
	_ = s.SetSource(v1alpha1.GitOpsSource{URL: "https://git.example.com/platform/fleet.git", Ref: v1alpha1.GitOpsRef{Branch: "main", Commit: "4f1c0ffee4f1c0ffee4f1c0ffee4f1c0ffee4f1c"}, Path: "clusters/eu1", Prune: true})
}
