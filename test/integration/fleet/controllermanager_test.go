// SPDX-License-Identifier: Apache-2.0

package fleet_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// TestControllerManager starts a workload cluster with kube-controller-manager
// and checks that namespaces get service accounts and can be deleted, while
// the KWOK nodes (which send no heartbeats) stay Ready and schedulable.
func TestControllerManager(t *testing.T) {
	skipShort(t)
	f, err := devfleet.Up(t.Context(), devfleet.Options{Dir: t.TempDir(), NoHub: true, Clusters: 1,
		Profiles: []string{"hgx-h100"}, ControllerManager: true, DieWithParent: true, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	c := f.Workloads()[0]
	cs := clientFor(t, c)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cm-test"}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), framework.PollInterval, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("no default service account in %s: %v", ns.Name, err)
	}
	pod := framework.GPUPod(ns.Name, "gpu", devfleet.ResourceGPU, 8)
	if _, err := cs.CoreV1().Pods(ns.Name).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := framework.WaitPodRunning(t.Context(), cs, ns.Name, pod.Name, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(t.Context(), ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), framework.PollInterval, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("namespace %s not deleted: %v", ns.Name, err)
	}
	if err := framework.WaitNodesReady(t.Context(), cs, c.Nodes, time.Second); err != nil {
		t.Errorf("nodes after the controller-manager ran: %v", err)
	}
}
