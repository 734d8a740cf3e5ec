// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	"context"
	"fmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"testing"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

const benchObjects = 500

// BenchmarkSync500Create measures a sync that creates 500 objects (a
// Namespace and 499 ConfigMaps): fetch, build, dry-run, apply, inventory,
// health wait. Each iteration pushes the set into a fresh namespace.
func BenchmarkSync500Create(b *testing.B) {
	integration(b)
	a := newAgent(b, true)
	repo := newRepo(b, manyConfigMaps(a.ns+"-bench-0", benchObjects-1))
	src := source(repo, "")
	src.Prune = false
	ctx := context.Background()
	for i := range b.N {
		b.StopTimer()
		if i > 0 {
			repo.push(b, manyConfigMaps(fmt.Sprintf("%s-bench-%d", a.ns, i), benchObjects-1))
		}
		if err := a.syncer.SetSource(src); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		st, err := a.syncer.Sync(ctx)
		if err != nil || st.InventorySize != benchObjects {
			b.Fatalf("sync: %v (inventory %d)", err, st.InventorySize)
		}
	}
}

// BenchmarkSync500NoOp measures a re-sync of 500 unchanged objects at the
// same revision (ls-remote, build, dry-run, drift check, health): it writes
// nothing.
func BenchmarkSync500NoOp(b *testing.B) {
	integration(b)
	a := newAgent(b, true)
	repo := newRepo(b, manyConfigMaps(a.ns+"-noop", benchObjects-1))
	src := source(repo, "")
	src.HealthTimeout = &metav1.Duration{Duration: time.Minute}
	a.syncOK(b, src)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		st, err := a.syncer.Sync(ctx)
		if err != nil || st.Health != v1alpha1.GitOpsHealthHealthy {
			b.Fatalf("sync: %v", err)
		}
	}
}
