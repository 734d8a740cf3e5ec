// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// rolesJob turns a submitted job into launcher 1 × CPU + workers 2 × 8 GPUs.
func rolesJob(j *v1alpha1.Job) {
	r := testjob.New(j.Name).Role("launcher", 1, 0, "mpi-launcher", "mpirun").Role("worker", 2, 8, "trainer").Obj()
	j.Spec.Gang, j.Spec.Template, j.Spec.Roles = r.Spec.Gang, r.Spec.Template, r.Spec.Roles
}

func TestRolesMembersGetTheirRoleTemplateEnvAndLabel(t *testing.T) {
	r := newRig(t)
	r.Cluster("eu1", node("a", "r", 0), node("b", "r", 0))
	r.Submit("mpi", 0, 0, rolesJob)
	r.cycle()
	r.pass()
	pods := r.pods("mpi")
	if len(pods) != 3 {
		t.Fatalf("%d member pods, want 3", len(pods))
	}
	want := map[string]struct{ role, roleIndex, image string }{
		"0": {"launcher", "0", "mpi-launcher"}, "1": {"worker", "0", "trainer"}, "2": {"worker", "1", "trainer"}}
	targets := map[string]bool{}
	for _, p := range pods {
		idx := p.Labels[v1alpha1.LabelMember]
		w, ok := want[idx]
		if !ok {
			t.Fatalf("pod %s has member label %q", p.Name, idx)
		}
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		c := p.Spec.Containers[0]
		n, _ := strconv.Atoi(idx)
		if p.Name != v1alpha1.MemberPodName("mpi", 1, int32(n)) || c.Image != w.image ||
			p.Labels[v1alpha1.LabelRole] != w.role || env[v1alpha1.EnvRole] != w.role ||
			env[v1alpha1.EnvRoleIndex] != w.roleIndex || env["SHOAL_MEMBER_INDEX"] != idx || env["SHOAL_GANG_SIZE"] != "3" {
			t.Errorf("member %s: pod %s image %s labels %v env %v", idx, p.Name, c.Image, p.Labels, env)
		}
		if p.Spec.NodeName != "shoal-eu1-h100-80gb" {
			t.Errorf("member %s bound to %q", idx, p.Spec.NodeName)
		}
		gpus := c.Resources.Limits[v1alpha1.ResourceGPU]
		target, hasTarget := p.Annotations[v1alpha1.AnnotationTargetNode]
		if w.role == "launcher" {
			if hasTarget || !gpus.IsZero() {
				t.Errorf("launcher has target node %q and %s GPUs; want neither", target, gpus.String())
			}
			continue
		}
		if target == "" || gpus.Value() != 8 {
			t.Errorf("worker %s: target node %q, GPUs %s; want a node and 8", idx, target, gpus.String())
		}
		targets[target] = true
	}
	if len(targets) != 2 {
		t.Errorf("workers target %v, want both nodes", targets)
	}
	if j := r.Job("mpi"); len(j.Status.Members) != 3 || j.Status.Members[0].Role != "launcher" ||
		j.Status.Members[0].Node != "" || j.Status.Members[2].Role != "worker" {
		t.Errorf("member status %+v", j.Status.Members)
	}

	// The launcher failing restarts the whole gang, workers included.
	r.agent("mpi", -1, "")
	r.pass()
	r.agent("mpi", -1, corev1.PodRunning)
	r.pass()
	for _, p := range r.pods("mpi") {
		if p.Labels[v1alpha1.LabelRole] == "launcher" {
			p.Status.Phase = corev1.PodFailed
			if _, err := r.hub.CoreV1().Pods(p.Namespace).UpdateStatus(r.Ctx, &p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.pass()
	if n := len(r.pods("mpi")); n != 0 {
		t.Fatalf("%d members left after the launcher failed", n)
	}
	r.pass()
	r.cycle()
	r.pass()
	j := r.Job("mpi")
	if j.Status.Restarts != 1 || j.Status.Epoch != 2 {
		t.Fatalf("after the launcher failed: restarts %d epoch %d phase %s", j.Status.Restarts, j.Status.Epoch, j.Status.Phase)
	}
	if n := len(r.pods("mpi")); n != 3 {
		t.Fatalf("%d members of the restarted gang, want 3", n)
	}
	for _, p := range r.pods("mpi") {
		if p.Labels[v1alpha1.LabelEpoch] != "2" {
			t.Errorf("pod %s of epoch %s survived the restart", p.Name, p.Labels[v1alpha1.LabelEpoch])
		}
	}
}
