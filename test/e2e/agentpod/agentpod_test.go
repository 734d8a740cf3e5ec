// SPDX-License-Identifier: Apache-2.0

package agentpod

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// queue is the test's queue.
const queue = "agentpod"

// TestAgentPodFromChartRunsAGang: a real-node fleet whose one workload
// cluster's agent is the chart's Deployment on the real node (the fleet
// starts no host shoal-agent for it) registers and turns Ready on the hub;
// a gang of two rendezvous members runs to Succeeded in real containers,
// its logs read from the hub through the agent's kubelet endpoint; and the
// agent pod runs as the chart's ServiceAccount with no kubeconfig, admin
// or otherwise, mounted or named.
func TestAgentPodFromChartRunsAGang(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers and the agent's release image")
	}
	archive, ref := agentImage(t)
	p, err := devfleet.LookupProfile("hgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	name := p.Short + "-1"
	bin := func(b string) string { return filepath.Join(bins, b) }
	real := devfleet.NewRealNodeOptions(1, bin("shoal-pause"), bin("shoal-deviceplugin"), bin("shoal-rendezvous"))
	real.Archives = []string{archive}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	fl, err := framework.StartFleet(ctx, devfleet.Options{
		Profiles: []string{"hgx-h100"}, Clusters: 1, Nodes: 1, RealNodes: real,
		Shoal: &devfleet.ShoalOptions{HubBinary: bin("shoal-hub"), AgentBinary: bin("shoal-agent"),
			ReadyTimeout:  2 * time.Minute,
			AgentStarters: map[string]devfleet.AgentStarter{name: installChart(ref)}},
	})
	if err != nil {
		t.Fatalf("start fleet: %v", err)
	}
	t.Cleanup(func() { _ = fl.Stop(t.Failed()) })
	t.Logf("fleet up in %s: hub process, cluster %s with its agent as the chart's pod", time.Since(start).Round(100*time.Millisecond), name)
	c := fl.Cluster(name)
	for _, proc := range c.Processes {
		if proc.Name == devfleet.AgentProcess {
			t.Fatalf("the fleet started a host %s (pid %d) for %s", proc.Name, proc.Pid, name)
		}
	}
	wcs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	pod := agentPod(t, wcs)
	checkIdentity(t, pod)

	// The hub saw the cluster Ready (Up waits for it); say so from the CLI too.
	cli := func(stdin string, args ...string) string {
		t.Helper()
		out, err := shoalCLI(fl, stdin, args...)
		if err != nil {
			t.Fatalf("shoal %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	if out := cli("", "cluster", "list"); !strings.Contains(out, name) || !strings.Contains(out, "Ready") {
		t.Fatalf("shoal cluster list does not show %s Ready:\n%s", name, out)
	}
	cli("", "queue", "create", queue)
	cli(rendezvousJob("pod-agent-gang", 2, 1), "job", "submit", "-f", "-")
	j := waitSucceeded(t, fl, "pod-agent-gang", 2*time.Minute)
	for _, m := range j.Status.Members {
		if m.Cluster != name {
			t.Fatalf("member %d on cluster %q, want %s", m.Index, m.Cluster, name)
		}
	}
	hcs, err := fl.Hub().Clientset()
	if err != nil {
		t.Fatal(err)
	}
	members, err := hcs.CoreV1().Pods(v1alpha1.ClusterNamespace(name)).List(t.Context(),
		metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=pod-agent-gang"})
	if err != nil || len(members.Items) != 2 {
		t.Fatalf("member pods on the hub: %v (%d, want 2)", err, len(members.Items))
	}
	for _, m := range members.Items {
		b, err := hcs.CoreV1().Pods(m.Namespace).GetLogs(m.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
		if err != nil {
			t.Fatalf("logs of %s from the hub (through the agent pod's kubelet endpoint): %v", m.Name, err)
		}
		if !strings.Contains(string(b), "rendezvous complete: world size 2") {
			t.Fatalf("member %s did not complete the rendezvous of 2; its log:\n%s", m.Name, b)
		}
	}
	// The members ran on the real node, made by the agent pod in the queue's namespace.
	local, err := wcs.CoreV1().Pods(v1alpha1.LocalMemberNamespace(queue)).List(t.Context(),
		metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=pod-agent-gang"})
	if err != nil || len(local.Items) != 2 {
		t.Fatalf("local member pods in %s: %v (%d, want 2)", v1alpha1.LocalMemberNamespace(queue), err, len(local.Items))
	}
	for _, l := range local.Items {
		if l.Spec.NodeName != c.RealNodes[0].Name {
			t.Fatalf("local member %s on node %q, want the real node %s", l.Name, l.Spec.NodeName, c.RealNodes[0].Name)
		}
	}
	if again := agentPod(t, wcs); again.UID != pod.UID || restarts(again) != 0 {
		t.Fatalf("the agent pod was replaced or restarted during the test (uid %s -> %s, %d restarts)", pod.UID, again.UID, restarts(again))
	}
}

// agentPod is the chart's one agent pod, on the cluster's real node.
func agentPod(t *testing.T, cs kubernetes.Interface) *corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(devfleet.AgentNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: agentSelector})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("agent pods (%s) in %s: %v (%d, want 1)", agentSelector, devfleet.AgentNamespace, err, len(pods.Items))
	}
	return &pods.Items[0]
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// checkIdentity fails unless the agent pod runs the release image as the
// chart's ServiceAccount (its projected token the only credential for the
// workload cluster): no --kubeconfig, no KUBECONFIG, no host path, only
// the chart's own Secrets, ConfigMaps, emptyDirs and the token projection.
func checkIdentity(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if p.Spec.ServiceAccountName != "shoal-agent" {
		t.Fatalf("agent pod runs as ServiceAccount %q, want the chart's shoal-agent", p.Spec.ServiceAccountName)
	}
	if !p.Spec.HostNetwork {
		t.Fatal("agent pod is not on the host network (the fleet has no kube-proxy)")
	}
	allowedSecrets := map[string]bool{"shoal-agent-join": true}
	allowedConfigMaps := map[string]bool{"shoal-agent-kubelet-client-ca": true, "kube-root-ca.crt": true}
	token := false
	for _, v := range p.Spec.Volumes {
		switch {
		case v.HostPath != nil:
			t.Fatalf("agent pod mounts host path %s (volume %s)", v.HostPath.Path, v.Name)
		case v.Secret != nil && !allowedSecrets[v.Secret.SecretName]:
			t.Fatalf("agent pod mounts Secret %s, not one of the chart's", v.Secret.SecretName)
		case v.ConfigMap != nil && !allowedConfigMaps[v.ConfigMap.Name]:
			t.Fatalf("agent pod mounts ConfigMap %s, not one of the chart's", v.ConfigMap.Name)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ServiceAccountToken != nil:
					token = true
				case s.Secret != nil:
					t.Fatalf("agent pod projects Secret %s", s.Secret.Name)
				case s.ConfigMap != nil && !allowedConfigMaps[s.ConfigMap.Name]:
					t.Fatalf("agent pod projects ConfigMap %s", s.ConfigMap.Name)
				}
			}
		case v.EmptyDir != nil, v.Secret != nil, v.ConfigMap != nil:
		default:
			t.Fatalf("agent pod has volume %s of an unexpected kind: %+v", v.Name, v.VolumeSource)
		}
	}
	if !token {
		t.Fatal("agent pod has no projected ServiceAccount token: it cannot be running as the chart's ServiceAccount")
	}
	if len(p.Spec.Containers) != 1 {
		t.Fatalf("agent pod has %d containers, want 1", len(p.Spec.Containers))
	}
	ctr := p.Spec.Containers[0]
	for _, a := range append(append([]string{}, ctr.Command...), ctr.Args...) {
		if strings.Contains(a, "kubeconfig") {
			t.Fatalf("agent container is given a kubeconfig: %q", a)
		}
	}
	for _, e := range ctr.Env {
		if e.Name == "KUBECONFIG" {
			t.Fatalf("agent container has KUBECONFIG=%s", e.Value)
		}
	}
	if ctr.ImagePullPolicy != corev1.PullNever {
		t.Fatalf("agent image pull policy %s, want Never (the image is the locally built one)", ctr.ImagePullPolicy)
	}
}

// shoalCLI runs the shoal CLI against the fleet's hub with stdin.
func shoalCLI(fl *framework.Fleet, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bins, "shoal"), append([]string{"--config", fl.Shoal.Config}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// waitSucceeded waits until the job Succeeded, failing early when it Failed.
func waitSucceeded(t *testing.T, fl *framework.Fleet, name string, timeout time.Duration) *v1alpha1.Job {
	t.Helper()
	var j v1alpha1.Job
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, timeout, true, func(context.Context) (bool, error) {
		out, err := shoalCLI(fl, "", "job", "get", name, "-o", "json")
		if err != nil {
			last = out
			return false, nil
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			return false, fmt.Errorf("decode job: %w\n%s", err, out)
		}
		if j.Status.Phase == v1alpha1.JobFailed {
			return false, fmt.Errorf("job %s Failed: %+v", name, j.Status.Conditions)
		}
		return j.Status.Phase == v1alpha1.JobSucceeded, nil
	})
	if err != nil {
		t.Fatalf("job %s Succeeded: %v (last %s; job %+v)", name, err, last, j.Status)
	}
	return &j
}

// rendezvousJob is a job of members running the rendezvous program, gpus
// each, on one cluster.
func rendezvousJob(name string, members, gpus int) string {
	return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: %s
spec:
  queue: %s
  gang: {members: %d, gpusPerMember: %d}
  placement: {maxClusters: 1}
  template:
    spec:
      containers:
      - name: rendezvous
        image: %s
        imagePullPolicy: Never
`, name, queue, members, gpus, devfleet.RendezvousImage)
}
