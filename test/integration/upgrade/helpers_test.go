// SPDX-License-Identifier: Apache-2.0

package upgrade_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// startOldFleet starts two KWOK clusters of 2 HGX H100 nodes with the hub
// and agents built at commit, and returns those binaries, this checkout's,
// the fleet, a client of its hub and its pods.
func startOldFleet(t *testing.T, commit string) (old, cur *devfleet.ShoalOptions, f *devfleet.Fleet, hub *hubClient, pods fleetPods) {
	t.Helper()
	start := time.Now()
	old = previousBinaries(t, commit)
	cur = currentBinaries(t)
	f, err := devfleet.Up(t.Context(), devfleet.Options{Dir: fleetDir(t), Clusters: 2, Profiles: []string{"hgx-h100"}, Nodes: 2,
		Out: testWriter{t}, DieWithParent: true, Shoal: old})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	t.Logf("fleet of %s up after %s", commit[:7], time.Since(start).Round(time.Second))
	return old, cur, f, dialHub(t, f.Shoal.Config), fleetPodsOf(t, f)
}

// finishedJobs creates the queue and leaves two finished jobs under the old
// hub, done-ok (succeeded) and done-cancel (cancelled), and returns the
// builder of the tests' n × 8 GPU gangs.
func finishedJobs(t *testing.T, hub *hubClient, pods fleetPods) func(name string, members int32) *v1alpha1.Job {
	t.Helper()
	hub.createQueue(t, testqueue.New(queue).Obj())
	gang := func(name string, members int32) *v1alpha1.Job {
		return testjob.New(name).Queue(queue).Members(members).GPUs(8).Obj()
	}
	hub.submit(t, gang("done-ok", 1))
	waitPhase(t, hub, "done-ok", v1alpha1.JobRunning)
	succeed(t, pods, "done-ok")
	waitPhase(t, hub, "done-ok", v1alpha1.JobSucceeded)
	hub.submit(t, gang("done-cancel", 1))
	waitPhase(t, hub, "done-cancel", v1alpha1.JobRunning)
	hub.cancel(t, "done-cancel")
	waitPhase(t, hub, "done-cancel", v1alpha1.JobCancelled)
	return gang
}

func fleetPodsOf(t *testing.T, f *devfleet.Fleet) fleetPods {
	t.Helper()
	hcs, err := f.Hub().Clientset()
	if err != nil {
		t.Fatal(err)
	}
	p := fleetPods{hub: hcs, workloads: map[string]kubernetes.Interface{}}
	for _, c := range f.Workloads() {
		cs, err := c.Clientset()
		if err != nil {
			t.Fatal(err)
		}
		p.workloads[c.Name] = cs
	}
	return p
}

func hubProcess(t *testing.T, f *devfleet.Fleet) *devfleet.Process {
	t.Helper()
	for _, p := range f.Hub().Processes {
		if p.Name == devfleet.HubProcess && p.Alive() {
			return p
		}
	}
	t.Fatal("no shoal-hub running")
	return nil
}

func mustJob(t *testing.T, hub *hubClient, name string) *v1alpha1.Job {
	t.Helper()
	j, err := hub.job(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s (last: %v)", what, timeout, last)
	}
}

func waitPhase(t *testing.T, hub *hubClient, name string, phase v1alpha1.JobPhase) {
	t.Helper()
	poll(t, 90*time.Second, fmt.Sprintf("job %s %s", name, phase), func(ctx context.Context) (bool, error) {
		j, err := hub.job(ctx, name)
		if err != nil {
			return false, err
		}
		return j.Status.Phase == phase, fmt.Errorf("phase %s, placement %+v", j.Status.Phase, j.Status.Placement)
	})
}

// waitWhy waits until the scheduler explains why the pending job waits.
func waitWhy(t *testing.T, hub *hubClient, name string) {
	t.Helper()
	poll(t, 60*time.Second, "a reason for pending job "+name, func(ctx context.Context) (bool, error) {
		j, err := hub.job(ctx, name)
		if err != nil {
			return false, err
		}
		if j.Status.Phase != v1alpha1.JobPending {
			return false, fmt.Errorf("job %s is %s: the fleet is not full", name, j.Status.Phase)
		}
		return j.Status.Placement != nil && j.Status.Placement.Explanation != "", nil
	})
}

// keepRunning checks for d that each job stays Running at its epoch.
func keepRunning(t *testing.T, hub *hubClient, pods fleetPods, epochs map[string]int64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for name, epoch := range epochs {
			j, err := hub.job(t.Context(), name)
			if err != nil {
				t.Fatal(err)
			}
			if j.Status.Phase != v1alpha1.JobRunning || j.Status.Epoch != epoch || j.Status.Restarts != 0 {
				t.Fatalf("job %s: %s at epoch %d with %d restarts, want Running at epoch %d; conditions %v, dispatch %+v; pods:\n%s",
					name, j.Status.Phase, j.Status.Epoch, j.Status.Restarts, epoch, j.Status.Conditions, j.Status.Dispatch,
					pods.describe(t.Context(), name))
			}
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// succeed ends every local pod of job with exit code 0, as its processes
// would (KWOK runs none).
func succeed(t *testing.T, pods fleetPods, job string) {
	t.Helper()
	local, err := pods.localPods(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for cluster, ps := range local {
		for _, p := range ps {
			n++
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.Now()}}}}
			if _, err := pods.workloads[cluster].CoreV1().Pods(p.Namespace).UpdateStatus(t.Context(), &p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n == 0 {
		t.Fatalf("job %s has no local pods to end", job)
	}
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	poll(t, 2*time.Minute, "hub /readyz", func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("/readyz: %s", resp.Status)
	})
}

// waitClusterReady waits until the hub sees cluster Ready with a heartbeat
// of its new agent and every virtual node of it Ready.
func waitClusterReady(t *testing.T, f *devfleet.Fleet, hub *hubClient, cluster string) {
	t.Helper()
	hcs, err := f.Hub().Clientset()
	if err != nil {
		t.Fatal(err)
	}
	since := metav1.Now()
	poll(t, 90*time.Second, "cluster "+cluster+" Ready with its new agent", func(ctx context.Context) (bool, error) {
		c, err := hub.cluster(ctx, cluster)
		if err != nil {
			return false, err
		}
		if c.Status.State != "Ready" || c.Status.LastHeartbeat == nil || c.Status.LastHeartbeat.Before(&since) {
			return false, fmt.Errorf("state %q, last heartbeat %v", c.Status.State, c.Status.LastHeartbeat)
		}
		nodes, err := hcs.CoreV1().Nodes().List(ctx, metav1.ListOptions{
			LabelSelector: v1alpha1.VirtualNodeSelector + "," + v1alpha1.LabelCluster + "=" + cluster})
		if err != nil || len(nodes.Items) == 0 {
			return false, fmt.Errorf("virtual nodes: %d (%v)", len(nodes.Items), err)
		}
		for _, n := range nodes.Items {
			if !nodeReady(n) {
				return false, fmt.Errorf("virtual node %s not Ready", n.Name)
			}
		}
		return true, nil
	})
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fleetDir is the fleet's directory, kept with its logs when the test fails.
func fleetDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "shoal-upgrade-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SHOAL_KEEP_FLEET") != "" {
			t.Logf("fleet logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}
