// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

const memberNS = "shoal-jobs"

func isAlreadyExists(err error) bool { return errors.Is(err, store.ErrAlreadyExists) }

// newJob is a gang of members×gpus in queue.
func newJob(name, queue string, members, gpus int32, mutate ...func(*v1alpha1.Job)) *v1alpha1.Job {
	w := testjob.New(name).Queue(queue).Members(members).GPUs(gpus)
	for _, m := range mutate {
		w.With(m)
	}
	return w.Obj()
}

func submit(t *testing.T, j *v1alpha1.Job) {
	t.Helper()
	ensureQueue(t, j.Spec.Queue)
	if _, _, _, err := h.jobs.Submit(t.Context(), j, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancelAndWaitGone(t, j.Name) })
}

func getJob(t *testing.T, name string) *v1alpha1.Job {
	t.Helper()
	j, _, err := h.jobs.Get(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if ok {
			return true, nil
		}
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %v (last error: %v)", what, timeout, last)
	}
}

func waitPhase(t *testing.T, name string, phase v1alpha1.JobPhase, timeout time.Duration) *v1alpha1.Job {
	t.Helper()
	var j *v1alpha1.Job
	eventually(t, timeout, fmt.Sprintf("job %s %s", name, phase), func(ctx context.Context) (bool, error) {
		var err error
		j, _, err = h.jobs.Get(ctx, name)
		if err != nil {
			return false, err
		}
		return j.Status.Phase == phase, fmt.Errorf("phase %s, conditions %v", j.Status.Phase, j.Status.Conditions)
	})
	return j
}

// localPods returns the job's local pods in every workload cluster, by
// cluster, whatever their namespace (the agents put them in their queue's).
func localPods(ctx context.Context, job string) (map[string][]corev1.Pod, error) {
	out := map[string][]corev1.Pod{}
	for name, cs := range workloads {
		l, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
		if err != nil {
			return nil, err
		}
		if len(l.Items) > 0 {
			out[name] = l.Items
		}
	}
	return out, nil
}

func hubPods(ctx context.Context, job string) ([]corev1.Pod, error) {
	// Every cluster's namespace (v1alpha1.ClusterNamespace).
	l, err := h.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelJob + "=" + job})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// waitNothingLeft waits until the job has no pods on any side and no reservation.
func waitNothingLeft(t *testing.T, job string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "no member of "+job+" left anywhere", func(ctx context.Context) (bool, error) {
		hp, err := hubPods(ctx, job)
		if err != nil {
			return false, err
		}
		lp, err := localPods(ctx, job)
		if err != nil {
			return false, err
		}
		return len(hp) == 0 && len(lp) == 0, fmt.Errorf("%d hub pods, local pods in %d clusters", len(hp), len(lp))
	})
}

// cancelAndWaitGone cancels a job and waits until nothing of it is left.
func cancelAndWaitGone(t *testing.T, job string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := h.jobs.Cancel(ctx, job); err != nil {
		t.Errorf("cancel %s: %v", job, err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		hp, err := hubPods(ctx, job)
		if err != nil {
			return false, nil
		}
		lp, err := localPods(ctx, job)
		return err == nil && len(hp) == 0 && len(lp) == 0, nil
	})
	if err != nil {
		t.Errorf("members of cancelled job %s still exist", job)
	}
}

func condition(j *v1alpha1.Job, t string) *metav1.Condition {
	return meta.FindStatusCondition(j.Status.Conditions, t)
}
