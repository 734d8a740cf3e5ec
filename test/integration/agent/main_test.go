// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/hub/hubcluster"
	"github.com/shoal-dev/shoal/test/builders/testnode"
	"github.com/shoal-dev/shoal/test/framework"
)

var (
	hubCP, workCP *framework.ControlPlane
	hubAdmin      kubernetes.Interface
	work          kubernetes.Interface
	hub           *fakeHub
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if hubCP, err = framework.StartControlPlane(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = hubCP.Stop() }()
	if workCP, err = framework.StartControlPlane(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = workCP.Stop() }()
	hubAdmin = kubernetes.NewForConfigOrDie(hubCP.Config)
	work = kubernetes.NewForConfigOrDie(workCP.Config)
	dir, err := os.MkdirTemp("", "shoal-agent-it")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	var stop func()
	if hub, stop, err = startFakeHub(dir, hubcluster.New(hubCP.Config)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	code := m.Run()
	if bench != nil {
		bench.stop()
	}
	return code
}

// eventually polls cond every 100 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %v (last error: %v)", what, timeout, last)
	}
}

// gpuNode builds a workload-cluster GPU node as KWOK or a real kubelet would show it.
func gpuNode(name, product, rack string, res map[string]int64) *corev1.Node {
	w := testnode.New(name).Capacity(corev1.ResourcePods, 110, 110).
		Label(fedinv.LabelGPUProduct, product).Label(fedinv.LabelGPUMemory, "81559").Label(fedinv.DefaultLabelKeys().Rack, rack)
	for r, v := range res {
		w.Capacity(corev1.ResourceName(r), v, v)
	}
	n := w.Obj()
	c := &n.Status.Conditions[0]
	c.Reason, c.LastHeartbeatTime, c.LastTransitionTime = "KubeletReady", metav1.Now(), metav1.Now()
	return n
}

func createNode(ctx context.Context, c kubernetes.Interface, n *corev1.Node) error {
	st := n.Status
	created, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = st
	_, err = c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

func restConfigCopy(c *rest.Config) *rest.Config { return rest.CopyConfig(c) }

func resourceQty(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.DecimalSI) }
