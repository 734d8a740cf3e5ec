// SPDX-License-Identifier: Apache-2.0

package computedomain

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

func cdJob(name string, members int32) *v1alpha1.Job {
	return &v1alpha1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.JobSpec{Queue: "cd", Gang: v1alpha1.Gang{Members: members, GPUsPerMember: 4, ComputeDomain: true},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "train", Image: "busybox",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{fedinv.ResourceGPU: resource.MustParse("4")}}}}}}},
	}
}

// domainsOf lists the job's ComputeDomains in the workload cluster.
func domainsOf(ctx context.Context, t *testing.T, job string) []unstructured.Unstructured {
	t.Helper()
	l, err := dyn.Resource(gang.ComputeDomainResource).Namespace(metav1.NamespaceAll).List(ctx,
		metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func gatedPod(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == v1alpha1.SchedulingGate {
			return true
		}
	}
	return false
}

// watchFirstUngated watches the job's local pods and, at the first event
// showing one of them without Shoal's gate (the commit reached the
// cluster), lists the job's ComputeDomains: their number is sent once.
func watchFirstUngated(ctx context.Context, t *testing.T, job string) <-chan int {
	out := make(chan int, 1)
	w, err := cs.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || gatedPod(p) {
				continue
			}
			out <- len(domainsOf(ctx, t, job))
			return
		}
	}()
	return out
}

// TestComputeDomainGangs: a 6 × 4-GPU gang asking for a compute domain
// lands in two racks and gets one ComputeDomain per rack (numNodes its
// nodes there), created before the hub's commit; its local pods claim from
// their rack's channel template; the simulator turns each domain Ready
// once the pods bound; the job runs. A second compute-domain gang of 2
// does not go to the two free nodes of the first's half-used rack but to
// the third rack; a third waits, naming the compute domain. A compute
// domain with MIG slices is refused with its field path.
func TestComputeDomainGangs(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet")
	}
	ctx := t.Context()
	hub := fl.NewHubAPI(t)
	hub.WaitInventory(t, cluster, time.Minute, func(c *fedinv.Cluster) bool {
		return c.ComputeDomains && len(c.Nodes) == racks*rackSize && c.FreeGPUs() == racks*rackSize*4
	})
	hub.EnsureQueue(t, "cd")

	out, err := shoalCLI(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: cd-mig
spec:
  queue: cd
  gang:
    members: 1
    computeDomain: true
    mig: {profile: 1g.10gb}
  template:
    spec:
      containers:
      - name: train
        image: busybox
`, "job", "submit", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.gang.computeDomain") {
		t.Fatalf("computeDomain with mig: err %v, output %s; want a refusal naming spec.gang.computeDomain", err, out)
	}

	first := watchFirstUngated(ctx, t, "cd-a")
	hub.Submit(t, cdJob("cd-a", 6))
	j := hub.WaitJobPhase(t, "cd-a", v1alpha1.JobRunning, 2*time.Minute)
	if n := <-first; n != 2 {
		t.Fatalf("%d ComputeDomains when the first member was ungated, want 2 (made during prepare)", n)
	}
	committed := j.Status.Dispatch
	if committed == nil || committed.Time == nil {
		t.Fatalf("no dispatch decision time: %+v", j.Status)
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=cd-a"})
	if err != nil || len(pods.Items) != 6 {
		t.Fatalf("local pods of cd-a: %d, %v", len(pods.Items), err)
	}
	cliqueOf := map[string]string{}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		cliqueOf[n.Name] = n.Labels[fedinv.LabelGPUClique]
	}
	podsOfTemplate := map[string][]string{} // channel template → nodes of its pods
	heldA := map[string]bool{}
	for _, p := range pods.Items {
		var tmpl string
		for _, c := range p.Spec.ResourceClaims {
			if c.Name == v1alpha1.ComputeDomainClaim && c.ResourceClaimTemplateName != nil {
				tmpl = *c.ResourceClaimTemplateName
			}
		}
		want := v1alpha1.ComputeDomainChannelTemplate(v1alpha1.ComputeDomainName("cd-a", committed.Epoch, cliqueOf[p.Spec.NodeName]))
		if tmpl != want {
			t.Fatalf("pod %s on %s claims from template %q, want %q (its clique's)", p.Name, p.Spec.NodeName, tmpl, want)
		}
		podsOfTemplate[tmpl] = append(podsOfTemplate[tmpl], p.Spec.NodeName)
		heldA[cliqueOf[p.Spec.NodeName]] = true
	}
	var cds []unstructured.Unstructured
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cds = domainsOf(ctx, t, "cd-a")
		for _, cd := range cds {
			if s, _, _ := unstructured.NestedString(cd.Object, "status", "status"); s != fedinv.ComputeDomainStatusReady {
				return false, nil
			}
		}
		return len(cds) == 2, nil
	}); err != nil {
		t.Fatalf("cd-a's ComputeDomains not both Ready: %+v", cds)
	}
	for _, cd := range cds {
		tmpl, _, _ := unstructured.NestedString(cd.Object, "spec", "channel", "resourceClaimTemplate", "name")
		num, _, _ := unstructured.NestedInt64(cd.Object, "spec", "numNodes")
		if int(num) != len(podsOfTemplate[tmpl]) {
			t.Fatalf("ComputeDomain %s: numNodes %d, its pods are on %v", cd.GetName(), num, podsOfTemplate[tmpl])
		}
		if ct := cd.GetCreationTimestamp(); committed.Time.Before(&ct) {
			t.Fatalf("ComputeDomain %s created %s, after the commit %s", cd.GetName(), ct, committed.Time)
		}
		t.Logf("ComputeDomain %s: numNodes %d, created %s, commit %s, Ready", cd.GetName(), num,
			cd.GetCreationTimestamp().Format(time.RFC3339), committed.Time.Format(time.RFC3339))
	}

	hub.Submit(t, cdJob("cd-b", 2))
	hub.WaitJobPhase(t, "cd-b", v1alpha1.JobRunning, 2*time.Minute)
	podsB, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=cd-b"})
	if err != nil || len(podsB.Items) != 2 {
		t.Fatalf("local pods of cd-b: %v, %v", podsB, err)
	}
	for _, p := range podsB.Items {
		if heldA[cliqueOf[p.Spec.NodeName]] {
			t.Fatalf("cd-b's member %s on %s, in a clique cd-a holds", p.Name, p.Spec.NodeName)
		}
	}

	hub.Submit(t, cdJob("cd-c", 1))
	var why string
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := hub.GetJob(ctx, "cd-c")
		if err != nil {
			return false, nil
		}
		if c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPlaced); c != nil {
			why = c.Message
		}
		return strings.Contains(why, "compute domain"), nil
	}); err != nil {
		t.Fatalf("cd-c: Placed condition %q, want it waiting for a free clique", why)
	}
	t.Logf("cd-c waits: %s", why)
}

// shoalCLI runs the shoal CLI against the fleet's hub with stdin.
func shoalCLI(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bins, "shoal"), append([]string{"--config", fl.Shoal.Config}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
