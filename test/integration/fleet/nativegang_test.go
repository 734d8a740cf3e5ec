// SPDX-License-Identifier: Apache-2.0

package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// TestNativeGangSlices runs Shoal on two workload clusters that serve
// Kubernetes' native gang API (devfleet NativeGang: GenericWorkload on
// kube-apiserver and kube-scheduler). A 4 × 8 GPU gang split 2 + 2 gets one
// PodGroup per cluster slice (minCount 2, owned by the slice's local pods,
// which join it, constrained to the rack its two nodes share). Then the all-or-nothing case: a second gang's slice in
// cluster A is prepared while cluster B's agent is frozen (SIGSTOP), and a
// pod from outside Shoal takes one of A's two planned nodes before the
// commit; once B's agent resumes and the hub commits, A's kube-scheduler
// binds neither of A's members — the one whose node is still free stays
// unbound too — where without the group it would have bound alone.
func TestNativeGangSlices(t *testing.T) {
	skipShort(t)
	bins := buildShoal(t)
	cli := buildCLI(t)
	f, err := devfleet.Up(t.Context(), devfleet.Options{Dir: t.TempDir(), Clusters: 2, Profiles: []string{"hgx-h100"}, Nodes: 2,
		NativeGang: true, Out: testWriter{t}, DieWithParent: true, Shoal: bins})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	run := cliRunner(t, cli, f)
	a, b := f.Workloads()[0], f.Workloads()[1]
	csA, csB := clientFor(t, a), clientFor(t, b)
	ns := v1alpha1.LocalMemberNamespace("native")
	run("", "queue", "create", "native")
	manifest := func(name string) string {
		return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: %s
spec:
  queue: native
  gang: {members: 4, gpusPerMember: 8}
  placement: {maxClusters: 2}
  template:
    spec:
      containers:
      - name: main
        image: busybox
`, name)
	}

	run(manifest("ng-split"), "job", "submit", "-f", "-")
	waitJobPhase(t, run, "ng-split", v1alpha1.JobRunning)
	for _, cs := range []kubernetes.Interface{csA, csB} {
		pods := jobPods(t, cs, ns, "ng-split")
		if len(pods) != 2 {
			t.Fatalf("%d local pods of ng-split in a cluster, want 2", len(pods))
		}
		name := v1alpha1.SlicePodGroupName("ng-split", 1)
		for _, p := range pods {
			if g := p.Spec.SchedulingGroup; g == nil || g.PodGroupName == nil || *g.PodGroupName != name {
				t.Errorf("pod %s: schedulingGroup %+v, want PodGroup %s", p.Name, g, name)
			}
		}
		pg, err := cs.SchedulingV1beta1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("PodGroup %s: %v", name, err)
		}
		if pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 2 || len(pg.OwnerReferences) != 2 {
			t.Errorf("PodGroup %s: policy %+v, owners %d; want gang minCount 2 owned by the 2 pods", name,
				pg.Spec.SchedulingPolicy, len(pg.OwnerReferences))
		}
		// The slice's two nodes share a rack (racks of 8), not an NVLink
		// domain (HGX: the node): the group is constrained to the rack.
		if sc := pg.Spec.SchedulingConstraints; sc == nil || len(sc.Topology) != 1 || sc.Topology[0].Key != fedinv.DefaultLabelKeys().Rack {
			t.Errorf("PodGroup %s: scheduling constraints %+v, want topology key %s", name, sc, fedinv.DefaultLabelKeys().Rack)
		}
	}
	run("", "job", "cancel", "ng-split")
	waitNoPods(t, csA, ns, "ng-split")
	waitNoPods(t, csB, ns, "ng-split")
	clusters := shoalv1.NewClustersClient(dialFleetHub(t, f))
	waitFor(t, time.Minute, "the hub's inventories to show every GPU free again", func(ctx context.Context) bool {
		for _, w := range []*devfleet.Cluster{a, b} {
			obj, err := clusters.GetInventory(ctx, &shoalv1.GetClusterRequest{Name: w.Name})
			var inv fedinv.Cluster
			if err != nil || json.Unmarshal(obj.Json, &inv) != nil || inv.FreeGPUs() != 16 {
				return false
			}
		}
		return true
	})

	// The all-or-nothing case.
	agentB := agentOf(t, f, b.Name)
	if err := syscall.Kill(agentB.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(agentB.Pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	run(manifest("ng-race"), "job", "submit", "-f", "-")
	var slice []corev1.Pod
	waitFor(t, time.Minute, "ng-race's slice in cluster A prepared and gated", func(ctx context.Context) bool {
		slice = jobPods(t, csA, ns, "ng-race")
		if len(slice) != 2 {
			return false
		}
		for _, p := range slice {
			if len(p.Spec.SchedulingGates) == 0 || !prepared(&p) {
				return false
			}
		}
		return true
	})
	taken := slice[0].Annotations[v1alpha1.AnnotationTargetNode]
	intruder := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "intruder", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{NodeName: taken, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{v1alpha1.ResourceGPU: resource.MustParse("8")}}}}},
	}
	if _, err := csA.CoreV1().Pods(metav1.NamespaceDefault).Create(t.Context(), intruder, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = csA.CoreV1().Pods(metav1.NamespaceDefault).Delete(context.Background(), "intruder", metav1.DeleteOptions{})
	})
	resume()
	waitFor(t, time.Minute, "the hub's commit lifting the gates of ng-race's slice in cluster A", func(ctx context.Context) bool {
		slice = jobPods(t, csA, ns, "ng-race")
		for _, p := range slice {
			if len(p.Spec.SchedulingGates) > 0 {
				return false
			}
		}
		return len(slice) == 2
	})
	// Give the kube-scheduler time to bind what it would bind.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range jobPods(t, csA, ns, "ng-race") {
			if p.Spec.NodeName != "" {
				t.Fatalf("member %s bound to %s while its slice cannot fit whole (%s is taken): the slice half-bound",
					p.Name, p.Spec.NodeName, taken)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, p := range jobPods(t, csA, ns, "ng-race") {
		t.Logf("member %s (planned on %s): unbound, %s", p.Name, p.Annotations[v1alpha1.AnnotationTargetNode], scheduledMessage(&p))
	}
}

// jobPods lists a job's local pods in a workload cluster's namespace.
func jobPods(t *testing.T, cs kubernetes.Interface, ns, job string) []corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
	if err != nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func waitNoPods(t *testing.T, cs kubernetes.Interface, ns, job string) {
	t.Helper()
	waitFor(t, time.Minute, "no local pods of "+job, func(ctx context.Context) bool {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
		return err == nil && len(l.Items) == 0
	})
}

// prepared says whether a local pod is prepared: by its status condition,
// or created prepared (v1alpha1.PreparedCondition).
func prepared(p *corev1.Pod) bool {
	c := v1alpha1.PreparedCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

func scheduledMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return fmt.Sprintf("PodScheduled=%s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return "no PodScheduled condition"
}
