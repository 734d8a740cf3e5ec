// SPDX-License-Identifier: Apache-2.0

package fleet_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// TestUpWithShoal starts a fleet the way `shoal dev up` does by default: the
// clusters, then shoal-hub and one shoal-agent per workload cluster. Every
// cluster must be Ready on the hub with its virtual nodes in the hub cluster,
// and Down (from the state file alone) must stop agents and hub too.
func TestUpWithShoal(t *testing.T) {
	skipShort(t)
	bins := buildShoal(t)
	dir := t.TempDir()
	opts := devfleet.Options{Dir: dir, Clusters: 2, Profiles: []string{"hgx-h100", "a100-mig"}, Nodes: 16,
		Out: testWriter{t}, DieWithParent: true, Shoal: bins}
	f, err := devfleet.Up(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	procs := f.Processes()
	t.Cleanup(func() { _ = f.Stop() })

	count := map[string]int{}
	for _, p := range procs {
		count[p.Name]++
		if !p.Alive() {
			t.Errorf("%s (pid %d) is not running after Up", p.Name, p.Pid)
		}
	}
	if count[devfleet.HubProcess] != 1 || count[devfleet.AgentProcess] != 2 {
		t.Fatalf("processes by name %v: want 1 %s and 2 %s", count, devfleet.HubProcess, devfleet.AgentProcess)
	}
	if f.Shoal == nil {
		t.Fatal("state records no hub")
	}
	if _, err := os.Stat(f.Shoal.Config); err != nil {
		t.Errorf("CLI config: %v", err)
	}

	loaded, err := devfleet.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	states, err := loaded.ClusterStates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	hcs, err := loaded.Hub().Clientset()
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := devfleet.VirtualNodes(t.Context(), hcs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range loaded.Workloads() {
		if states[c.Name] != "Ready" {
			t.Errorf("cluster %s is %q on the hub, want Ready (all: %v)", c.Name, states[c.Name], states)
		}
		if nodes[c.Name] == 0 {
			t.Errorf("cluster %s has no virtual nodes in the hub cluster (all: %v)", c.Name, nodes)
		}
	}

	checkHubPodLogs(t, hcs, "shoal-"+loaded.Workloads()[0].Name+"-h100-80gb")

	if err := loaded.Down(); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if running(p.Pid) {
			t.Errorf("%s (pid %d) still running after Down", p.Name, p.Pid)
		}
	}
	for _, c := range f.Clusters {
		for _, port := range []int{c.Ports.Shoal, c.Ports.ShoalHTTP} {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				t.Errorf("%s: shoal port %d still taken after Down: %v", c.Name, port, err)
				continue
			}
			_ = l.Close()
		}
	}
	for _, gone := range []string{"state.json", "shoal-config", "clusters/hub/shoal-hub-data"} {
		if m, _ := filepath.Glob(filepath.Join(dir, gone)); len(m) > 0 {
			t.Errorf("Down left %v", m)
		}
	}
}

// TestUpMissingShoalBinaries checks that a missing shoal-hub is reported
// before anything starts.
func TestUpMissingShoalBinaries(t *testing.T) {
	skipShort(t)
	missing := filepath.Join(t.TempDir(), "shoal-hub")
	_, err := devfleet.Up(t.Context(), devfleet.Options{Dir: t.TempDir(), Clusters: 1,
		Shoal: &devfleet.ShoalOptions{HubBinary: missing, AgentBinary: missing}})
	if !errors.Is(err, devfleet.ErrMissingShoalBinaries) {
		t.Fatalf("Up without shoal-hub: %v, want ErrMissingShoalBinaries", err)
	}
}

// TestUpAgentExits checks that an agent that dies while the fleet starts
// fails Up at once with its log, and that Up stops what it started.
func TestUpAgentExits(t *testing.T) {
	skipShort(t)
	bins := *buildShoal(t)
	bins.AgentBinary = "/bin/false"
	f, err := devfleet.Up(t.Context(), devfleet.Options{Dir: t.TempDir(), Clusters: 1, Profiles: []string{"hgx-h100"}, Nodes: 16,
		DieWithParent: true, Shoal: &bins})
	if f != nil {
		_ = f.Stop()
	}
	if !errors.Is(err, devfleet.ErrComponentExited) || !strings.Contains(err.Error(), devfleet.AgentProcess) {
		t.Fatalf("Up with an agent that exits: %v, want ErrComponentExited naming %s", err, devfleet.AgentProcess)
	}
}

var (
	shoalOnce sync.Once
	shoalBins *devfleet.ShoalOptions
	shoalErr  error
)

// buildShoal builds shoal-hub and shoal-agent from this checkout, once per
// test binary.
func buildShoal(t *testing.T) *devfleet.ShoalOptions {
	t.Helper()
	shoalOnce.Do(func() {
		out, err := os.MkdirTemp("", "shoal-bin-")
		if err != nil {
			shoalErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", out+"/", "./cmd/shoal-hub", "./cmd/shoal-agent")
		cmd.Dir = filepath.Join("..", "..", "..")
		if b, err := cmd.CombinedOutput(); err != nil {
			shoalErr = fmt.Errorf("go build: %w\n%s", err, b)
			return
		}
		shoalBins = &devfleet.ShoalOptions{HubBinary: filepath.Join(out, "shoal-hub"), AgentBinary: filepath.Join(out, "shoal-agent")}
	})
	if shoalErr != nil {
		t.Fatal(shoalErr)
	}
	return shoalBins
}

// checkHubPodLogs binds a GPU pod to a virtual node on the hub, waits until it
// runs, and reads its logs through the hub: hub API server, agent kubelet
// endpoint, workload API server, kwok's kubelet endpoint (simulated log).
func checkHubPodLogs(t *testing.T, hub kubernetes.Interface, node string) {
	t.Helper()
	ns, err := devfleet.VirtualNodeNamespace(t.Context(), hub, node) // the only one its agent watches
	if err != nil {
		t.Fatal(err)
	}
	pod := devfleet.GPUPod(ns, "hub-logs", devfleet.ResourceGPU, 8)
	pod.Spec.NodeName = node
	pod.Spec.Tolerations = []corev1.Toleration{{Key: v1alpha1.TaintVirtual, Operator: corev1.TolerationOpExists}}
	// As a member Shoal placed: the kubelet endpoint serves no other pod.
	pod.Labels = map[string]string{v1alpha1.LabelJob: pod.Name}
	pod.Annotations = map[string]string{v1alpha1.AnnotationQueue: "fleet"} // its agent runs no pod without a queue
	if _, err := hub.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := devfleet.WaitPodRunning(t.Context(), hub, ns, pod.Name, time.Minute); err != nil {
		t.Fatalf("pod bound to %s on the hub: %v", node, err)
	}
	b, err := hub.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("logs through the hub: %v", err)
	}
	if !strings.Contains(string(b), "simulated container log from KWOK") {
		t.Errorf("logs through the hub: %q, want KWOK's simulated container log", b)
	}
}
