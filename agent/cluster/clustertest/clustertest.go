// SPDX-License-Identifier: Apache-2.0

// Package clustertest runs the parts of an agent that read the shared
// workload cache (agent/cluster) on a fake cluster, for their tests.
package clustertest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shoal-dev/shoal/agent/cluster"
)

// Start creates pods in a fake cluster, a workload cache of it and, with
// build, the part under test; it runs both and waits for the cache's first
// sync. stop (called at the latest when the test ends) ends both and fails
// the test unless each Run returns nil within 5 s.
func Start(t testing.TB, build func(*cluster.Cache) func(context.Context) error, pods ...*corev1.Pod) (cs *fake.Clientset, stop func()) {
	t.Helper()
	cs = fake.NewClientset()
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	workload, err := cluster.New(cs)
	if err != nil {
		t.Fatal(err)
	}
	run := build(workload)
	ctx, cancel := context.WithCancel(t.Context())
	cacheDone, partDone := make(chan error, 1), make(chan error, 1)
	go func() { cacheDone <- workload.Run(ctx) }()
	go func() { partDone <- run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		for _, done := range []chan error{partDone, cacheDone} {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not end with its context")
			}
		}
	}
	t.Cleanup(stop)
	// Ending the cache before its first sync is an error: wait for it.
	select {
	case <-workload.Synced():
	case <-time.After(5 * time.Second):
		t.Fatal("the workload cache did not sync")
	}
	return cs, stop
}

// Eventually polls cond until it holds or 5 s passed.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
