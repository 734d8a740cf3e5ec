// SPDX-License-Identifier: Apache-2.0

package realnodes

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// container is one rendezvous container of a template, with extra YAML
// lines under it (indented for it) and under the pod spec.
func container(image string, args []string, extra, podExtra string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`      containers:
      - name: main
        image: %s
        imagePullPolicy: Never
        args: [%s]
%s%s`, image, strings.Join(quoted, ", "), extra, podExtra)
}

// TestRolesLauncherAndWorkers: a CPU-only launcher and two 4-GPU workers
// run as one gang; every member knows its role, and the launcher, member 0,
// is the master all of them reach.
func TestRolesLauncherAndWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers")
	}
	tmpl := container(devfleet.RendezvousImage, nil, "", "")
	submitJob(t, "realnodes", fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: rdv-roles
spec:
  queue: realnodes
  roles:
  - name: launcher
    members: 1
    template:
      spec:
  %s
  - name: worker
    members: 2
    gpusPerMember: 4
    template:
      spec:
  %s
`, indent(tmpl, 2), indent(tmpl, 2)))
	j := waitPhase(t, "rdv-roles", v1alpha1.JobSucceeded, 3*time.Minute)
	roles := map[string]int{}
	for _, m := range j.Status.Members {
		roles[m.Role]++
	}
	if roles["launcher"] != 1 || roles["worker"] != 2 {
		t.Fatalf("member roles %v, want launcher 1 and worker 2", roles)
	}
	for _, p := range hubMemberPods(t, "rdv-roles") {
		log := hubLogs(t, p.Name)
		checkWorld(t, "rdv-roles", p.Name, log, 3, 1)
		for r, role := range []string{"launcher", "worker", "worker"} {
			if want := fmt.Sprintf("rank=%d hostname=%s ", r, v1alpha1.MemberHostname("rdv-roles", int32(r))); !strings.Contains(log, want+"ip=") {
				t.Fatalf("%s: no line for rank %d", p.Name, r)
			}
			if !strings.Contains(log, fmt.Sprintf("role=%s member=%d", role, r)) {
				t.Fatalf("%s: rank %d is not the %s (member %d); log:\n%s", p.Name, r, role, r, log)
			}
		}
	}
}

// indent prefixes every line of s but the first with n spaces.
func indent(s string, n int) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+strings.Repeat(" ", n))
}

// TestDependenciesReachTheProcess: a ConfigMap env and a Secret volume of
// the template, created on the hub, reach the member's process in its
// workload cluster; a template naming a missing Secret is refused at submit
// with its field path.
func TestDependenciesReachTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers")
	}
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rn-cfg", Namespace: memberNS}, Data: map[string]string{"model": "llama"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "rn-creds", Namespace: memberNS}, StringData: map[string]string{"token": "one"}}
	if _, err := hubCS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: memberNS}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := hubCS.CoreV1().ConfigMaps(memberNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := hubCS.CoreV1().Secrets(memberNS).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := func(name, secret string) string {
		return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: %s
spec:
  queue: realnodes
  gang: {members: 1, gpusPerMember: 1}
  template:
    spec:
%s`, name, container(devfleet.RendezvousImage, []string{"--show", "env:MODEL", "--show", "file:/etc/creds/token"},
			`        env: [{name: MODEL, valueFrom: {configMapKeyRef: {name: rn-cfg, key: model}}}]
        volumeMounts: [{name: creds, mountPath: /etc/creds}]
`, fmt.Sprintf("      volumes: [{name: creds, secret: {secretName: %s}}]\n", secret)))
	}
	out, err := shoalCLI(t, job("rn-missing", "rn-nope"), "job", "submit", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.template.spec.volumes[0].secret.secretName") || !strings.Contains(out, `"rn-nope"`) {
		t.Fatalf("a missing Secret was not refused with its field path (err %v):\n%s", err, out)
	}
	if _, err := getJob(t, "rn-missing"); err == nil {
		t.Fatal("the refused job was stored")
	}
	submitJob(t, "realnodes", job("rn-deps", "rn-creds"))
	waitPhase(t, "rn-deps", v1alpha1.JobSucceeded, 3*time.Minute)
	pods := hubMemberPods(t, "rn-deps")
	if len(pods) != 1 {
		t.Fatalf("%d member pods, want 1", len(pods))
	}
	log := hubLogs(t, pods[0].Name)
	for _, want := range []string{"env MODEL=llama\n", "file /etc/creds/token: one\n", "rendezvous complete: world size 1"} {
		if !strings.Contains(log, want) {
			t.Fatalf("member log lacks %q:\n%s", want, log)
		}
	}
}

// TestKubeletVerbsThroughTheHub: logs, exec, attach and port-forward on the
// hub reach a real container through the agent's virtual kubelet, and the
// virtual node's /pods and stats summary list exactly its member.
func TestKubeletVerbsThroughTheHub(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers")
	}
	submitJob(t, "realnodes", fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: rn-echo
spec:
  queue: realnodes
  gang: {members: 1, gpusPerMember: 1}
  template:
    spec:
%s`, container(echoImage, nil, `        stdin: true
        env: [{name: ECHO_PORT, value: "7000"}]
        ports: [{containerPort: 7000}]
`, "")))
	waitPhase(t, "rn-echo", v1alpha1.JobRunning, 3*time.Minute)
	pods := hubMemberPods(t, "rn-echo")
	if len(pods) != 1 {
		t.Fatalf("%d member pods, want 1", len(pods))
	}
	pod, vnode, hubNS := pods[0].Name, pods[0].Spec.NodeName, pods[0].Namespace // its cluster's namespace
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var log string
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(context.Context) (bool, error) {
		log = hubLogs(t, pod)
		return strings.Contains(log, "echo: ready"), nil
	})
	if !strings.Contains(log, "echo: ready") {
		t.Fatalf("logs from the hub: %q", log)
	}
	if out, errOut, err := framework.Exec(ctx, hubRC, hubNS, pod, "main", "/echo", "--say", "exec", "works"); err != nil ||
		out != "exec works\n" {
		t.Fatalf("exec through the hub: %q %q %v", out, errOut, err)
	}
	if out, err := framework.AttachUntil(ctx, hubRC, hubNS, pod, "main", "attached through the hub\n", "attached through the hub\n"); err != nil {
		t.Fatalf("attach through the hub: %q %v", out, err)
	}
	if got, err := framework.PortForward(ctx, hubRC, hubNS, pod, 7000, []byte("over the port-forward")); err != nil ||
		string(got) != "over the port-forward" {
		t.Fatalf("port-forward through the hub: %q %v", got, err)
	}
	listed, err := framework.NodePods(ctx, hubCS, vnode)
	if err != nil {
		t.Fatal(err)
	}
	// Exactly the hub pods bound to the virtual node: this member and the
	// ended members other tests' finished jobs keep there.
	bound, err := hubCS.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + vnode})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, p := range bound.Items {
		want[p.Name] = string(p.UID)
	}
	got := map[string]string{}
	for _, p := range listed {
		got[p.Name] = string(p.UID)
	}
	if !maps.Equal(got, want) || got[pod] != string(pods[0].UID) {
		t.Fatalf("/pods of %s lists %v, want exactly the pods bound to it %v (with %s)", vnode, got, want, pod)
	}
	var found bool
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		sum, err := framework.NodeStatsSummary(ctx, hubCS, vnode)
		if err != nil || sum.Node.NodeName != vnode {
			return false, nil
		}
		for _, ps := range sum.Pods {
			if ps.PodRef.Name == pod && string(pods[0].UID) == ps.PodRef.UID && ps.CPU != nil && ps.Memory != nil {
				found = true
			}
		}
		return found, nil
	})
	if !found {
		t.Fatalf("the stats summary of %s has no CPU and memory figures of %s", vnode, pod)
	}
}
