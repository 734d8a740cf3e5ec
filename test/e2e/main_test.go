// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

var (
	fl *framework.Fleet
	h  *hub
	// workloads maps a workload cluster's name to its admin client.
	workloads = map[string]kubernetes.Interface{}
	// clusterNames are the workload clusters, in fleet order.
	clusterNames []string
	// agentStops stops each workload cluster's agent (a test that runs its
	// own agent for a cluster stops the suite's first).
	agentStops = map[string]func(){}
	// agentConfigs are the rest configs of each workload cluster as the
	// agent gets it.
	agentConfigs = map[string]*rest.Config{}
	hubCtx       context.Context
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hubCtx = ctx
	sctx, scancel := context.WithTimeout(ctx, 10*time.Minute)
	var err error
	fl, err = framework.StartFleet(sctx, devfleet.Options{Profiles: []string{"hgx-h100"}, Clusters: 3, Nodes: 16})
	scancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start fleet:", err)
		return 1
	}
	code := 1
	defer func() { _ = fl.Stop(code != 0) }()
	dir, err := os.MkdirTemp("", "shoal-e2e-hub-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	hubRC, err := fl.Hub().RESTConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if h, err = startHub(ctx, dir, hubRC); err != nil {
		fmt.Fprintln(os.Stderr, "start hub:", err)
		return 1
	}
	defer h.stop()
	for _, c := range fl.Workloads() {
		rc, err := c.RESTConfig()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cs, err := c.Clientset()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shoal-system"}},
			metav1.CreateOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		stop, err := h.startAgent(ctx, c.Name, rc)
		if err != nil {
			fmt.Fprintln(os.Stderr, "start agent:", err)
			return 1
		}
		agentStops[c.Name], agentConfigs[c.Name] = stop, rc
		defer func() { agentStops[c.Name]() }()
		workloads[c.Name] = cs
		clusterNames = append(clusterNames, c.Name)
	}
	if err := waitFleetReady(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code = m.Run()
	return code
}

// waitFleetReady waits until every cluster is Ready with its 128 GPUs in
// the inventory and the dispatcher leads: it creates the users' namespace
// on the hub cluster (memberNS), where tests put jobs' dependencies.
func waitFleetReady(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, err := h.kube.CoreV1().Namespaces().Get(ctx, memberNS, metav1.GetOptions{}); err != nil {
			return false, nil
		}
		invs, err := h.reg.Inventories(ctx)
		if err != nil || len(invs) != len(clusterNames) {
			return false, nil
		}
		for _, inv := range invs {
			if inv.FreeGPUs() != 128 {
				return false, nil
			}
			c, _, err := h.reg.GetCluster(ctx, inv.Name)
			if err != nil || c.Status.State != v1alpha1.ClusterReady {
				return false, nil
			}
		}
		return true, nil
	})
}

// ensureQueue creates a top-level queue once.
func ensureQueue(t *testing.T, name string) {
	t.Helper()
	_, _, err := h.queues.Create(t.Context(), &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
}
