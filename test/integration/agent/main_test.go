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
	rl := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
	for r, v := range res {
		rl[corev1.ResourceName(r)] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			fedinv.LabelGPUProduct: product, fedinv.LabelGPUMemory: "81559", fedinv.DefaultLabelKeys().Rack: rack}},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}},
	}
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
