// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// TestQuotaNominal16NoBorrowing: a queue with nominal 16 H100 and
// borrowing limit 0 submits four 8-GPU jobs on a fleet with 384 free GPUs.
// Sampled every 100 ms, the queue never holds more than 16 GPUs (jobs
// placed or running, and local pods running); the other two wait with
// QuotaExceeded, and one starts when a running job is cancelled.
func TestQuotaNominal16NoBorrowing(t *testing.T) {
	skipShort(t)
	const queue = "quota16"
	if _, _, err := h.queues.Create(t.Context(), testqueue.New(queue).Quota("h100", 16).BorrowingLimit("h100", 0).Obj()); err != nil {
		t.Fatal(err)
	}
	names := []string{"quota-0", "quota-1", "quota-2", "quota-3"}
	for _, n := range names {
		submit(t, newJob(n, queue, 1, 8))
	}
	var maxHeld, maxLocal int
	sample := func(ctx context.Context) (running, waiting []string, err error) {
		held, local := 0, 0
		for _, n := range names {
			j, _, err := h.jobs.Get(ctx, n)
			if err != nil {
				return nil, nil, err
			}
			switch j.Status.Phase {
			case v1alpha1.JobPlaced, v1alpha1.JobRunning:
				held += 8
				if j.Status.Phase == v1alpha1.JobRunning {
					running = append(running, n)
				}
			case v1alpha1.JobPending:
				if c := condition(j, v1alpha1.JobConditionPlaced); c != nil && c.Reason == "QuotaExceeded" {
					waiting = append(waiting, n)
				}
			}
			pods, err := localPods(ctx, n)
			if err != nil {
				return nil, nil, err
			}
			for _, ps := range pods {
				for _, p := range ps {
					if p.Status.Phase == corev1.PodRunning {
						local += 8
					}
				}
			}
		}
		maxHeld, maxLocal = max(maxHeld, held), max(maxLocal, local)
		if held > 16 || local > 16 {
			t.Fatalf("queue %s holds %d GPUs (%d in running local pods), quota 16 + 0", queue, held, local)
		}
		return running, waiting, nil
	}
	var running []string
	eventually(t, 2*time.Minute, "two jobs running, two waiting on quota", func(ctx context.Context) (bool, error) {
		r, w, err := sample(ctx)
		running = r
		return err == nil && len(r) == 2 && len(w) == 2, fmt.Errorf("running %v, waiting on quota %v (err %v)", r, w, err)
	})
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if _, _, err := sample(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "queue status", func(ctx context.Context) (bool, error) {
		q, _, err := h.queues.Get(ctx, queue)
		if err != nil {
			return false, err
		}
		s := q.Status
		return s.PendingJobs == 2 && s.ActiveJobs == 2 && s.UsedGPUs["h100"] == 16 && len(s.BorrowedGPUs) == 0,
			fmt.Errorf("status %+v", s)
	})
	cancelAndWaitGone(t, running[0])
	eventually(t, 2*time.Minute, "a waiting job runs in the freed quota", func(ctx context.Context) (bool, error) {
		r, w, err := sample(ctx)
		return err == nil && len(r) == 2 && len(w) == 1, fmt.Errorf("running %v, waiting on quota %v (err %v)", r, w, err)
	})
	t.Logf("most GPUs held by queue %s at once: %d (in running local pods: %d)", queue, maxHeld, maxLocal)
}

// TestQuotaBorrowAndReclaim: on one cluster (128 GPUs), queue borrow
// (nominal 64, borrowing unlimited) fills it with eight 16-GPU jobs,
// borrowing the idle nominal of queue lend; lend opted into reclaim, so its
// 32-GPU job preempts two of borrow's jobs (only borrow's surplus) and
// runs; borrow's preempted jobs wait without taking the GPUs back.
func TestQuotaBorrowAndReclaim(t *testing.T) {
	skipShort(t)
	c := spare()
	lend := testqueue.New("lend").Quota("h100", 64).Obj()
	lend.Spec.ReclaimBorrowed = true
	for _, q := range []*v1alpha1.Queue{testqueue.New("borrow").Quota("h100", 64).Obj(), lend} {
		if _, _, err := h.queues.Create(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	grace := int64(1)
	var names []string
	for i := range 8 {
		n := fmt.Sprintf("borrow-%d", i)
		names = append(names, n)
		submit(t, newJob(n, "borrow", 2, 8, onCluster(c), func(j *v1alpha1.Job) { j.Spec.Preemption.GracePeriodSeconds = &grace }))
	}
	phases := func(ctx context.Context) (map[v1alpha1.JobPhase]int, error) {
		out := map[v1alpha1.JobPhase]int{}
		for _, n := range names {
			j, _, err := h.jobs.Get(ctx, n)
			if err != nil {
				return nil, err
			}
			out[j.Status.Phase]++
		}
		return out, nil
	}
	eventually(t, 2*time.Minute, "borrow's eight jobs running", func(ctx context.Context) (bool, error) {
		p, err := phases(ctx)
		return err == nil && p[v1alpha1.JobRunning] == 8, fmt.Errorf("phases %v (err %v)", p, err)
	})
	queueStatus := func(name string, used, borrowed int32) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			q, _, err := h.queues.Get(ctx, name)
			if err != nil {
				return false, err
			}
			return q.Status.UsedGPUs["h100"] == used && q.Status.BorrowedGPUs["h100"] == borrowed, fmt.Errorf("status %+v", q.Status)
		}
	}
	eventually(t, 30*time.Second, "borrow holds 128, borrows 64", queueStatus("borrow", 128, 64))
	submit(t, newJob("lend-0", "lend", 4, 8, onCluster(c)))
	waitPhase(t, "lend-0", v1alpha1.JobRunning, 2*time.Minute)
	eventually(t, time.Minute, "two of borrow's jobs preempted and waiting", func(ctx context.Context) (bool, error) {
		p, err := phases(ctx)
		return err == nil && p[v1alpha1.JobRunning] == 6 && p[v1alpha1.JobPending] == 2, fmt.Errorf("phases %v (err %v)", p, err)
	})
	eventually(t, 30*time.Second, "borrow holds 96, borrows 32", queueStatus("borrow", 96, 32))
	eventually(t, 30*time.Second, "lend holds 32", queueStatus("lend", 32, 0))
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if j := getJob(t, "lend-0"); j.Status.Phase != v1alpha1.JobRunning {
			t.Fatalf("lend-0 lost its GPUs: phase %s", j.Status.Phase)
		}
	}
}
