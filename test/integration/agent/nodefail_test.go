// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/agent/gang"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// nodeFailureGrace is the agent's node failure grace in these tests.
const nodeFailureGrace = 3 * time.Second

// memberPod is the hub pod of member 0 of job llama at epoch, targeting
// node, committed already when committed is set (no scheduling gate).
func memberPod(epoch, node string, committed bool) *corev1.Pod {
	ann := map[string]string{v1alpha1.AnnotationEpoch: epoch, v1alpha1.AnnotationTargetNode: node}
	if committed {
		ann[v1alpha1.AnnotationCommit] = epoch
	}
	p := hubPod("llama-e"+epoch+"-0", h100Node, ann, 8)
	p.Labels[v1alpha1.LabelJob] = "llama"
	return p
}

// runMember creates a committed member on node and waits for its hub pod
// to be Running.
func runMember(ctx context.Context, t *testing.T, epoch, node string) *corev1.Pod {
	t.Helper()
	p := memberPod(epoch, node, true)
	if _, err := hubAdmin.CoreV1().Pods(hubNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLocal(t, p.Name)
	if err := bindAndRun(ctx, work, teamA, p.Name, node); err != nil {
		t.Fatal(err)
	}
	waitHubPod(t, p.Name, "Running", func(hp *corev1.Pod) bool { return hp.Status.Phase == corev1.PodRunning })
	return p
}

func waitHubPod(t *testing.T, name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var hp *corev1.Pod
	eventually(t, 30*time.Second, "hub pod "+name+" "+what, func(ctx context.Context) (bool, error) {
		var err error
		hp, err = hubAdmin.CoreV1().Pods(hubNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil && ok(hp), err
	})
	return hp
}

func setNodeReady(ctx context.Context, t *testing.T, node string, st corev1.ConditionStatus) {
	t.Helper()
	n, err := work.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status, n.Status.Conditions[i].LastTransitionTime = st, metav1.Now()
		}
	}
	if _, err := work.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deleteHubPod(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	zero := int64(0)
	if err := hubAdmin.CoreV1().Pods(hubNS).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil &&
		!apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitLocalGone(t, name)
}

// testNodeNotReady: a running member's node turns NotReady; its hub pod is
// Failed with reason NodeNotReady within the grace and a few seconds, and
// its local pod is gone.
func testNodeNotReady(ctx context.Context, t *testing.T) {
	p := runMember(ctx, t, "1", "n2")
	setNodeReady(ctx, t, "n2", corev1.ConditionFalse)
	start := time.Now()
	hp := waitHubPod(t, p.Name, "Failed/NodeNotReady", func(hp *corev1.Pod) bool {
		return hp.Status.Phase == corev1.PodFailed && hp.Status.Reason == v1alpha1.ReasonNodeNotReady
	})
	took := time.Since(start)
	t.Logf("node NotReady -> hub pod Failed/%s in %v (grace %v): %s", hp.Status.Reason, took, nodeFailureGrace, hp.Status.Message)
	if took < nodeFailureGrace-500*time.Millisecond || took > nodeFailureGrace+5*time.Second {
		t.Errorf("hub pod Failed after %v, want the grace %v plus at most 5s", took, nodeFailureGrace)
	}
	if !strings.Contains(hp.Status.Message, "n2") {
		t.Errorf("message %q does not name the node", hp.Status.Message)
	}
	waitLocalGone(t, p.Name)
	setNodeReady(ctx, t, "n2", corev1.ConditionTrue)
	deleteHubPod(ctx, t, p.Name)
}

// testStaleMembersRemoved: the hub pod of a newer epoch arrives (as when a
// cut heals) while a member of the old one runs: the old member stops at
// once, its hub pod Failed with reason StaleEpoch.
func testStaleMembersRemoved(ctx context.Context, t *testing.T) {
	old := runMember(ctx, t, "2", "n1")
	newer := memberPod("3", "n2", false)
	if _, err := hubAdmin.CoreV1().Pods(hubNS).Create(ctx, newer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitHubPod(t, old.Name, "Failed/StaleEpoch", func(hp *corev1.Pod) bool {
		return hp.Status.Phase == corev1.PodFailed && hp.Status.Reason == v1alpha1.ReasonStaleEpoch
	})
	waitLocalGone(t, old.Name)
	t.Logf("newer epoch's hub pod -> stale member gone in %v", time.Since(start))
	waitHubPod(t, newer.Name, "Prepared", func(hp *corev1.Pod) bool {
		for _, c := range hp.Status.Conditions {
			if c.Type == v1alpha1.PodConditionPrepared && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	deleteHubPod(ctx, t, old.Name)
}

// testRestartKeepsEpochs: a restarted agent, whose job's newest local pods
// are gone, still refuses an older epoch (from the epoch record).
func testRestartKeepsEpochs(ctx context.Context, t *testing.T, a **runningAgent) {
	cm, err := work.CoreV1().ConfigMaps("shoal-system").Get(ctx, gang.EpochsConfigMap, metav1.GetOptions{})
	if err != nil || !strings.HasPrefix(cm.Data[teamA+".llama"], "3 ") {
		t.Fatalf("epoch record: %v %v", cm, err)
	}
	deleteHubPod(ctx, t, "llama-e3-0")
	(*a).stop(t)
	*a = startAgent(t, "")
	eventually(t, 60*time.Second, "h100 virtual node Ready again", func(ctx context.Context) (bool, error) {
		n, err := hubAdmin.CoreV1().Nodes().Get(ctx, h100Node, metav1.GetOptions{})
		return err == nil && nodeReady(n) == corev1.ConditionTrue, err
	})
	stale := memberPod("2", "n1", false)
	stale.Name = "llama-e2-1"
	if _, err := hubAdmin.CoreV1().Pods(hubNS).Create(ctx, stale, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the stale member refused", func(ctx context.Context) (bool, error) {
		evs, err := hubAdmin.CoreV1().Events(hubNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + stale.Name})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if strings.Contains(ev.Message, gang.ErrStaleEpoch.Error()) {
				t.Logf("refused: %s: %s", ev.Reason, ev.Message)
				return true, nil
			}
		}
		return false, nil
	})
	if _, err := work.CoreV1().Pods(teamA).Get(ctx, stale.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a member of stale epoch 2 was run after a restart: %v", err)
	}
	deleteHubPod(ctx, t, stale.Name)
}
