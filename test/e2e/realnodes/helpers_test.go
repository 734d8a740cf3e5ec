// SPDX-License-Identifier: Apache-2.0

package realnodes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// memberNS is the users' namespace on the hub, where the objects jobs
// reference are created (the members live in their cluster's namespace on
// the hub and in their queue's in the workload clusters).
const memberNS = "shoal-jobs"

// shoalCLI runs the shoal CLI against the fleet's hub with stdin.
func shoalCLI(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	// Not t.Context(): cleanups (cancelJob) run after it is cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bins, "shoal"), append([]string{"--config", fl.Shoal.Config}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// mustCLI is shoalCLI that fails the test on a non-zero exit.
func mustCLI(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := shoalCLI(t, stdin, args...)
	if err != nil {
		t.Fatalf("shoal %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// submitJob creates the queue if needed, submits the job manifest through
// the CLI and cancels the job when the test ends.
func submitJob(t testing.TB, queue, manifest string) {
	t.Helper()
	if out, err := shoalCLI(t, "", "queue", "create", queue); err != nil && !strings.Contains(out, "already exists") {
		t.Fatalf("shoal queue create %s: %v\n%s", queue, err, out)
	}
	mustCLI(t, manifest, "job", "submit", "-f", "-")
	name := manifestName(manifest)
	t.Cleanup(func() { cancelJob(t, name) })
}

// manifestName is metadata.name of a job manifest written by the tests.
func manifestName(manifest string) string {
	for _, l := range strings.Split(manifest, "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(l), "name: "); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// cancelJob cancels the job and waits until none of its member pods runs
// on the hub any more (a finished job keeps its ended members, which hold
// no GPUs, for shoal-hub's --finished-member-retention).
func cancelJob(t testing.TB, name string) {
	_, _ = shoalCLI(t, "", "job", "cancel", name)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := hubCS.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + name})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				return false, nil
			}
		}
		return true, nil
	})
}

// getJob reads the job through `shoal job get -o json`.
func getJob(t testing.TB, name string) (*v1alpha1.Job, error) {
	t.Helper()
	out, err := shoalCLI(t, "", "job", "get", name, "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	var j v1alpha1.Job
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		return nil, fmt.Errorf("decode job: %v\n%s", err, out)
	}
	return &j, nil
}

// waitPhase waits until the job reaches phase (failing early on another
// terminal phase) and returns it.
func waitPhase(t *testing.T, name string, phase v1alpha1.JobPhase, timeout time.Duration) *v1alpha1.Job {
	t.Helper()
	var j *v1alpha1.Job
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var err error
		if j, err = getJob(t, name); err != nil {
			last = err
			return false, nil
		}
		if j.Status.Phase != phase && (j.Status.Phase == v1alpha1.JobSucceeded || j.Status.Phase == v1alpha1.JobFailed) {
			return false, fmt.Errorf("job %s is %s, want %s: %+v", name, j.Status.Phase, phase, j.Status.Conditions)
		}
		return j.Status.Phase == phase, nil
	})
	if err != nil {
		t.Fatalf("job %s %s: %v (last error %v; job %+v)", name, phase, err, last, j)
	}
	return j
}

// hubMemberPods lists the job's member pods on the hub, by member index.
func hubMemberPods(t *testing.T, name string) []corev1.Pod {
	t.Helper()
	pods, err := hubCS.CoreV1().Pods(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		return pods.Items[i].Labels[v1alpha1.LabelMember] < pods.Items[j].Labels[v1alpha1.LabelMember]
	})
	return pods.Items
}

// settledMemberPods waits until the job's member pods on the hub have
// settled: none is being deleted (members the hub stops when the job ends
// lose their local pod first, so their logs are gone while their hub pod
// waits for the agent's confirmation) and every one left has finished.
func settledMemberPods(t *testing.T, name string, timeout time.Duration) []corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pods := hubMemberPods(t, name)
		settled := true
		for _, p := range pods {
			settled = settled && p.DeletionTimestamp == nil &&
				(p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
		}
		if settled {
			return pods
		}
		if time.Now().After(deadline) {
			t.Fatalf("member pods of %s on the hub did not settle within %s", name, timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// hubLogs reads a member's container log from the hub: hub API server, the
// agent's virtual kubelet, the workload API server, the real kubelet.
func hubLogs(t *testing.T, pod string) string {
	t.Helper()
	// The member is in its cluster's namespace of the hub.
	l, err := hubCS.CoreV1().Pods(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + pod})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("member pod %s on the hub: %v (%d found)", pod, err, len(l.Items))
	}
	b, err := hubCS.CoreV1().Pods(l.Items[0].Namespace).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("logs of %s from the hub: %v", pod, err)
	}
	return string(b)
}

// rendezvousJob is a job manifest of members running the rendezvous
// program, gpus each, over at most maxClusters clusters, with extra
// program arguments and YAML lines added under spec.
func rendezvousJob(name string, members, gpus, maxClusters int, args []string, specExtra string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: %s
spec:
  queue: realnodes
  gang: {members: %d, gpusPerMember: %d}
  placement: {maxClusters: %d}
%s  template:
    spec:
      containers:
      - name: rendezvous
        image: %s
        imagePullPolicy: Never
        args: [%s]
`, name, members, gpus, maxClusters, specExtra, devfleet.RendezvousImage, strings.Join(quoted, ", "))
}

// checkWorld fails unless log is a complete rendezvous of the job's
// members, perMember ranks each (rank r is member r / perMember's).
func checkWorld(t *testing.T, job, pod, log string, members, perMember int) {
	t.Helper()
	n := members * perMember
	if !strings.Contains(log, fmt.Sprintf("rendezvous complete: world size %d", n)) {
		t.Fatalf("member %s did not complete the rendezvous of %d; its log:\n%s", pod, n, log)
	}
	for r := range n {
		want := fmt.Sprintf("rank=%d hostname=%s ", r, v1alpha1.MemberHostname(job, int32(r/perMember)))
		if !strings.Contains(log, want) {
			t.Fatalf("member %s's world lacks %q; its log:\n%s", pod, want, log)
		}
	}
}
