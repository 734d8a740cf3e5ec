// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// TestRolesLauncherAndWorkersSucceed: a launcher (1 member, no GPU) and
// workers (2 × 8 GPUs) are placed as one gang in one cluster; the workers
// are pinned to their target nodes, the launcher is scheduled by the
// workload cluster's kube-scheduler; every pod carries its role; when every
// member's process ends with 0 the job is Succeeded.
func TestRolesLauncherAndWorkersSucceed(t *testing.T) {
	skipShort(t)
	const name = "mpi-roles"
	submit(t, testjob.New(name).Queue("e2e").Role("launcher", 1, 0, "mpi-launcher", "mpirun").
		Role("worker", 2, 8, "trainer", "sshd").Obj())
	j := waitPhase(t, name, v1alpha1.JobRunning, time.Minute)
	if len(j.Status.Members) != 3 || len(j.Status.Clusters()) != 1 {
		t.Fatalf("members %+v", j.Status.Members)
	}
	for i, want := range []string{"launcher", "worker", "worker"} {
		if m := j.Status.Members[i]; m.Index != int32(i) || m.Role != want || (m.Node == "") != (want == "launcher") {
			t.Errorf("member %d = %+v, want role %s", i, m, want)
		}
	}
	hp, err := hubPods(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	wantRole := map[string][2]string{"0": {"launcher", "0"}, "1": {"worker", "0"}, "2": {"worker", "1"}}
	for _, p := range hp {
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		w := wantRole[p.Labels[v1alpha1.LabelMember]]
		if p.Labels[v1alpha1.LabelRole] != w[0] || env[v1alpha1.EnvRole] != w[0] || env[v1alpha1.EnvRoleIndex] != w[1] {
			t.Errorf("hub pod %s: role label %q env %v, want %v", p.Name, p.Labels[v1alpha1.LabelRole], env, w)
		}
	}
	cluster := j.Status.Members[0].Cluster
	local, err := localPods(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if len(local) != 1 || len(local[cluster]) != 3 {
		t.Fatalf("local pods %d clusters, %d in %s; want 3 in one", len(local), len(local[cluster]), cluster)
	}
	for _, p := range local[cluster] {
		role := p.Labels[v1alpha1.LabelRole]
		gpus := p.Spec.Containers[0].Resources.Limits[v1alpha1.ResourceGPU]
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
			t.Fatalf("local pod %s (%s): phase %s node %q", p.Name, role, p.Status.Phase, p.Spec.NodeName)
		}
		switch role {
		case "launcher":
			if p.Annotations[v1alpha1.AnnotationTargetNode] != "" || !gpus.IsZero() || p.Spec.Containers[0].Image != "mpi-launcher" {
				t.Errorf("launcher %s: target %q GPUs %s image %s", p.Name, p.Annotations[v1alpha1.AnnotationTargetNode],
					gpus.String(), p.Spec.Containers[0].Image)
			}
		case "worker":
			if p.Spec.NodeName != p.Annotations[v1alpha1.AnnotationTargetNode] || gpus.Value() != 8 || p.Spec.Containers[0].Image != "trainer" {
				t.Errorf("worker %s: on %s, target %q, GPUs %s image %s", p.Name, p.Spec.NodeName,
					p.Annotations[v1alpha1.AnnotationTargetNode], gpus.String(), p.Spec.Containers[0].Image)
			}
		default:
			t.Errorf("local pod %s has role %q", p.Name, role)
		}
	}
	// Every member's process exits 0 (KWOK runs no process: the test ends them).
	for _, p := range local[cluster] {
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
				FinishedAt: metav1.Now()}}}}
		if _, err := workloads[cluster].CoreV1().Pods(p.Namespace).UpdateStatus(t.Context(), &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPhase(t, name, v1alpha1.JobSucceeded, time.Minute)
	eventually(t, time.Minute, "members gone after success", func(ctx context.Context) (bool, error) {
		hp, err := hubPods(ctx, name)
		return err == nil && len(hp) == 0, fmt.Errorf("%d hub pods left (%v)", len(hp), err)
	})
}
