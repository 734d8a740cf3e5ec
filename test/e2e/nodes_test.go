// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// nodeRuns counts these tests' jobs: a fresh name per run (-count).
var nodeRuns sync.Map

func nodeJobName(prefix string) string {
	n, _ := nodeRuns.LoadOrStore(prefix, new(int))
	c := n.(*int)
	*c++
	return fmt.Sprintf("%s-%d", prefix, *c)
}

// dispatchReasons records, from the job's watch until ctx ends, the
// message of the first Dispatched condition that starts with reason.
type dispatchReasons struct {
	mu   sync.Mutex
	seen string
}

func (d *dispatchReasons) watch(ctx context.Context, job, reason string) {
	for ev := range h.jobs.Watch(ctx, 0, job) {
		if ev.Job == nil {
			continue
		}
		if c := condition(ev.Job, v1alpha1.JobConditionDispatched); c != nil && strings.HasPrefix(c.Message, reason+": ") {
			d.mu.Lock()
			if d.seen == "" {
				d.seen = c.Message
			}
			d.mu.Unlock()
		}
	}
}

func (d *dispatchReasons) get() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen
}

// terminatingGraces watches job's local pods of epoch in cluster c until
// ctx ends and keeps, for each, the deletion grace of the first version
// seen terminating: the grace its deletion started with (KWOK ends a
// terminating pod with a delete of grace 0, which a later version shows).
// It returns once the watch is open.
func terminatingGraces(ctx context.Context, t *testing.T, c, job string, epoch int64, out *sync.Map) {
	t.Helper()
	w, err := workloads[c].CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(epoch, 10)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if ok && p.Annotations[v1alpha1.AnnotationEpoch] == want && p.DeletionGracePeriodSeconds != nil {
				out.LoadOrStore(p.Name, *p.DeletionGracePeriodSeconds)
			}
		}
	}()
}

// TestSpotNodeMovesGangWithCheckpointGrace: the node of a running gang's
// member gets the taint the agents read as a spot node marked to go
// (--spot-node-taint). The member is marked NodeReclaimed while it still
// runs, the hub moves the whole gang with its preemption grace (its local
// pods are deleted with that grace: SIGTERM, then the grace for a
// checkpoint), without counting a restart, and the gang runs again off
// that node.
func TestSpotNodeMovesGangWithCheckpointGrace(t *testing.T) {
	skipShort(t)
	c := spare()
	name := nodeJobName("spot")
	const graceSeconds = 3
	submit(t, newJob(name, "e2e", 2, 8, onCluster(c), func(j *v1alpha1.Job) {
		g := int64(graceSeconds)
		j.Spec.Preemption.GracePeriodSeconds = &g
	}))
	t.Cleanup(func() { cancelAndWaitGone(t, name) })
	j := waitPhase(t, name, v1alpha1.JobRunning, time.Minute)
	m := j.Status.Members[0]
	epoch := j.Status.Epoch

	sctx, scancel := context.WithCancel(t.Context())
	defer scancel()
	reasons := &dispatchReasons{}
	go reasons.watch(sctx, name, v1alpha1.ReasonNodeReclaimed)
	var graces sync.Map
	terminatingGraces(sctx, t, m.Cluster, name, epoch, &graces)

	start := time.Now()
	patch := fmt.Sprintf(`{"spec":{"taints":[{"key":%q,"effect":"NoSchedule"}]}}`, spotTaint)
	if _, err := workloads[m.Cluster].CoreV1().Nodes().Patch(t.Context(), m.Node, types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n, err := workloads[m.Cluster].CoreV1().Nodes().Get(context.Background(), m.Node, metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		var keep []corev1.Taint
		for _, tn := range n.Spec.Taints {
			if tn.Key != spotTaint {
				keep = append(keep, tn)
			}
		}
		n.Spec.Taints = keep
		if _, err := workloads[m.Cluster].CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	})
	j = waitMoved(t, name, epoch, func(x v1alpha1.MemberStatus) bool { return x.Cluster == m.Cluster && x.Node == m.Node })
	moved := time.Since(start)
	scancel()
	n := 0
	graces.Range(func(k, v any) bool {
		n++
		if v.(int64) != graceSeconds {
			t.Errorf("local pod %s of epoch %d deleted with grace %d s, want the preemption grace %d s", k, epoch, v, graceSeconds)
		}
		return true
	})
	if n == 0 {
		t.Error("no local pod of the old epoch was seen terminating, so the grace is unchecked")
	}
	t.Logf("spot taint on %s/%s to the gang Running again off it: %s (epoch %d, restarts %d); %d old members seen terminating with grace %d s; decision %q",
		m.Cluster, m.Node, moved.Round(10*time.Millisecond), j.Status.Epoch, j.Status.Restarts, n, graceSeconds, reasons.get())
	if !strings.Contains(reasons.get(), m.Node) {
		t.Errorf("the job's Dispatched condition never named the reclaim of %s (seen %q)", m.Node, reasons.get())
	}
}

// TestNodeNotReadyRestartsGangMeasured: the node of a running gang's member
// stops (KWOK no longer manages it, like a dead kubelet) and turns
// NotReady: the agent stops the member after its node failure grace (the
// default 10 s), the hub restarts the gang whole, and the test logs the
// time from NotReady to the gang Running again (no wall-clock assert).
func TestNodeNotReadyRestartsGangMeasured(t *testing.T) {
	skipShort(t)
	c := spare()
	name := nodeJobName("notready")
	submit(t, newJob(name, "e2e", 2, 8, onCluster(c)))
	t.Cleanup(func() { cancelAndWaitGone(t, name) })
	j := waitPhase(t, name, v1alpha1.JobRunning, time.Minute)
	m := j.Status.Members[0]
	epoch, restarts := j.Status.Epoch, j.Status.Restarts
	nodes := workloads[m.Cluster].CoreV1().Nodes()

	// Off KWOK's hands first (it would set Ready back), then NotReady.
	unmanaged := fmt.Sprintf(`{"metadata":{"annotations":{%q:"off"}}}`, devfleet.AnnotationKWOKNode)
	if _, err := nodes.Patch(t.Context(), m.Node, types.MergePatchType, []byte(unmanaged), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		managed := fmt.Sprintf(`{"metadata":{"annotations":{%q:"fake"}}}`, devfleet.AnnotationKWOKNode)
		if _, err := nodes.Patch(context.Background(), m.Node, types.MergePatchType, []byte(managed), metav1.PatchOptions{}); err != nil {
			t.Error(err)
		}
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := nodes.Get(ctx, m.Node, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return c.Status == corev1.ConditionTrue, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Errorf("node %s/%s not Ready again once KWOK manages it: %v", m.Cluster, m.Node, err)
		}
	})
	n, err := nodes.Get(t.Context(), m.Node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason = corev1.ConditionFalse, "KubeletStopped"
			n.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	start := time.Now()
	if _, err := nodes.UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var failedAt time.Duration
	eventually(t, 2*time.Minute, "gang running again off the NotReady node", func(ctx context.Context) (bool, error) {
		j = getJob(t, name)
		if d := j.Status.Dispatch; failedAt == 0 && d != nil && d.Epoch == epoch && d.Phase == v1alpha1.DispatchRestarting {
			failedAt = time.Since(start)
		}
		if j.Status.Phase != v1alpha1.JobRunning || j.Status.Epoch <= epoch {
			return false, fmt.Errorf("phase %s epoch %d", j.Status.Phase, j.Status.Epoch)
		}
		for _, x := range j.Status.Members {
			if x.Cluster == m.Cluster && x.Node == m.Node {
				return false, fmt.Errorf("member %d on the NotReady node %s", x.Index, m.Node)
			}
		}
		return true, nil
	})
	running := time.Since(start)
	t.Logf("node %s/%s NotReady to the gang Running again: %s (restart decided after %s; agent node failure grace 10 s; epoch %d, restarts %d)",
		m.Cluster, m.Node, running.Round(10*time.Millisecond), failedAt.Round(10*time.Millisecond), j.Status.Epoch, j.Status.Restarts)
	if j.Status.Restarts != restarts+1 {
		t.Errorf("restarts %d, want %d", j.Status.Restarts, restarts+1)
	}
}
