// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/inference"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/models"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// TestInferenceServiceLifecycle runs one InferenceService through what a
// user does with it, on the fleet's three clusters, with the hub's own
// controller (in the scheduler replica) making every decision:
//   - two replicas (min 2), each a gang of a leader and a worker, land in
//     two different clusters (SpreadClusters);
//   - a load of 35 at 10 per replica asks for 4, but the queue's quota (24
//     H100, no borrowing) holds 3 replicas of 8 GPUs: the 4th waits with
//     QuotaExceeded and no more than 3 are ever placed;
//   - without load it returns to 2 after the scale-down delay;
//   - a rollout to a new model version completes and, sampled every 100
//     ms, never has fewer than 2 replicas ready; the served version's
//     lineage leads to the training job and checkpoint it came from;
//   - a rollout whose new replicas cannot be placed is rolled back after
//     its progress deadline, the previous version still serving;
//   - with min 0 and no load it scales to zero, and a load report brings a
//     replica back;
//   - deleting the service cancels its replicas.
func TestInferenceServiceLifecycle(t *testing.T) {
	skipShort(t)
	ctx := t.Context()
	const queue = "serve"
	if _, _, err := h.queues.Create(ctx, testqueue.New(queue).Quota("h100", 24).BorrowingLimit("h100", 0).Obj()); err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
	// chat@1 was trained by a job that reported a checkpoint.
	submit(t, newJob("chat-train", "e2e", 1, 8))
	waitPhase(t, "chat-train", v1alpha1.JobRunning, time.Minute)
	if _, _, err := h.jobs.ReportCheckpoint(ctx, "chat-train", v1alpha1.CheckpointReport{Step: 500, URI: "s3://e2e/chat-train/500"}, "e2e"); err != nil {
		t.Fatal(err)
	}
	ms := models.New(h.st, h.jobs)
	for _, v := range []string{"1", "2", "3"} {
		mv := &v1alpha1.ModelVersion{Spec: v1alpha1.ModelVersionSpec{Model: "chat", Version: v,
			ArtifactURI: "s3://e2e/chat/" + v, Digest: "sha256:" + fmt.Sprintf("%064d", 0)}}
		if v == "1" {
			mv.Spec.Source = &v1alpha1.ModelSource{Job: "chat-train"}
		} else {
			mv.Spec.Parent = "chat@1"
		}
		if _, _, _, err := ms.Register(ctx, mv, "e2e", nil); err != nil {
			t.Fatal(err)
		}
	}
	svcs := inference.New(h.st, ms, h.jobs)
	svc := &v1alpha1.InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindInferenceService},
		ObjectMeta: metav1.ObjectMeta{Name: "chat"},
		Spec: v1alpha1.InferenceServiceSpec{Queue: queue, Model: "chat@1", Members: 2, GPUsPerMember: 4,
			Replicas:    v1alpha1.ServiceReplicas{Min: 2, Max: 4},
			Autoscaling: &v1alpha1.ServiceAutoscaling{TargetPerReplica: 10, ScaleDownDelaySeconds: 5},
			Rollout:     v1alpha1.ServiceRollout{ProgressDeadlineSeconds: 10},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "server", Image: "shoal.local/trainer:dev", Args: []string{"serve", "--port", "8000"}}}}}},
	}
	if _, _, err := svcs.Create(ctx, svc, "e2e"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteService(t, svcs, "chat") })

	// Two replicas, two clusters.
	waitService(t, svcs, "chat", time.Minute, "2 ready replicas in 2 clusters", func(s *v1alpha1.InferenceService) bool {
		return s.Status.ReadyReplicas == 2 && len(endpointClusters(s)) == 2 && allAddressed(s)
	})

	// Load: 4 wanted, 3 allowed by quota.
	if _, _, err := svcs.ReportLoad(ctx, "chat", "user:e2e", 35); err != nil {
		t.Fatal(err)
	}
	waitService(t, svcs, "chat", time.Minute, "3 ready, the 4th held by quota", func(s *v1alpha1.InferenceService) bool {
		return s.Status.DesiredReplicas == 4 && s.Status.ReadyReplicas == 3 && quotaHeld(ctx, t, s) == 1
	})
	if n := placedReplicas(ctx, t); n > 3 {
		t.Fatalf("%d replicas placed, above the queue's quota of 3", n)
	}
	// No load: back to 2 after the 5 s delay.
	if _, _, err := svcs.ReportLoad(ctx, "chat", "user:e2e", 0); err != nil {
		t.Fatal(err)
	}
	waitService(t, svcs, "chat", time.Minute, "back to 2 replicas", func(s *v1alpha1.InferenceService) bool {
		return s.Status.DesiredReplicas == 2 && s.Status.Replicas == 2 && s.Status.ReadyReplicas == 2
	})

	// A rollout to chat@2, never below 2 ready.
	minReady := watchMinReady(t, svcs, "chat")
	update(t, svcs, "chat", func(s *v1alpha1.InferenceService) { s.Spec.Model = "chat@2" })
	waitService(t, svcs, "chat", 2*time.Minute, "rollout to chat@2 complete", func(s *v1alpha1.InferenceService) bool {
		return s.Status.Model == "chat@2" && s.Status.Rollout != nil && s.Status.Rollout.Phase == v1alpha1.ServiceRolloutComplete &&
			s.Status.ReadyReplicas == 2 && allServe(s, "chat@2")
	})
	if m := minReady(); m < 2 {
		t.Fatalf("the rollout dropped to %d ready replicas, below the minimum 2", m)
	}
	// Each replica is a gang of a leader and a worker, every member ready;
	// the served model's lineage goes back to the training job and checkpoint.
	for _, j := range replicaJobsOf(ctx, t) {
		if len(j.Status.Members) != 2 || !j.Status.Members[0].Ready || !j.Status.Members[1].Ready {
			t.Fatalf("replica %s members %+v, want 2 ready", j.Name, j.Status.Members)
		}
	}
	lineage, err := ms.Lineage(ctx, "chat@2")
	if err != nil {
		t.Fatal(err)
	}
	if root := lineage[len(lineage)-1]; len(lineage) != 2 || root.Status.Job == nil || root.Status.Job.Name != "chat-train" ||
		root.Status.Checkpoint == nil || root.Status.Checkpoint.Step != 500 {
		t.Fatalf("lineage of the served chat@2: %d versions, root %+v; want chat@1 from chat-train step 500", len(lineage), root.Status)
	}

	// A rollout whose replicas cannot be placed rolls back.
	minReady = watchMinReady(t, svcs, "chat")
	update(t, svcs, "chat", func(s *v1alpha1.InferenceService) {
		s.Spec.Model = "chat@3"
		s.Spec.Placement.GPUProducts = []string{"NVIDIA-B300-NOWHERE"}
	})
	s := waitService(t, svcs, "chat", time.Minute, "rollout to chat@3 rolled back", func(s *v1alpha1.InferenceService) bool {
		return s.Status.Rollout != nil && s.Status.Rollout.To == "chat@3" && s.Status.Rollout.Phase == v1alpha1.ServiceRolloutRolledBack
	})
	if s.Status.Model != "chat@2" || !allServe(s, "chat@2") {
		t.Fatalf("after the rollback: model %s, endpoints %+v; want chat@2 serving", s.Status.Model, s.Status.Endpoints)
	}
	waitService(t, svcs, "chat", 30*time.Second, "only chat@2 replicas left", func(s *v1alpha1.InferenceService) bool {
		return s.Status.Replicas == 2 && s.Status.ReadyReplicas == 2 && allServe(s, "chat@2")
	})
	if m := minReady(); m < 2 {
		t.Fatalf("the failed rollout dropped to %d ready replicas, below the minimum 2", m)
	}

	// Scale to zero and back.
	update(t, svcs, "chat", func(s *v1alpha1.InferenceService) {
		s.Spec.Model, s.Spec.Placement.GPUProducts, s.Spec.Replicas.Min = "chat@2", nil, 0
	})
	waitService(t, svcs, "chat", time.Minute, "scaled to zero", func(s *v1alpha1.InferenceService) bool {
		return s.Status.DesiredReplicas == 0 && s.Status.Replicas == 0
	})
	if _, _, err := svcs.ReportLoad(ctx, "chat", "user:e2e", 5); err != nil {
		t.Fatal(err)
	}
	waitService(t, svcs, "chat", time.Minute, "one replica back for load 5", func(s *v1alpha1.InferenceService) bool {
		return s.Status.ReadyReplicas == 1 && allAddressed(s)
	})

	deleteService(t, svcs, "chat")
	eventually(t, 30*time.Second, "the replicas cancelled", func(ctx context.Context) (bool, error) {
		n := placedReplicas(ctx, t)
		return n == 0, fmt.Errorf("%d replicas not finished", n)
	})
}

// waitService polls the service until ok holds and returns it.
func waitService(t *testing.T, svcs *inference.Service, name string, timeout time.Duration, what string, ok func(*v1alpha1.InferenceService) bool) *v1alpha1.InferenceService {
	t.Helper()
	var last *v1alpha1.InferenceService
	eventually(t, timeout, what, func(ctx context.Context) (bool, error) {
		s, _, err := svcs.Get(ctx, name)
		if err != nil {
			return false, err
		}
		last = s
		return ok(s), fmt.Errorf("status %s", describeService(s))
	})
	return last
}

func describeService(s *v1alpha1.InferenceService) string {
	out := fmt.Sprintf("model %s desired %d replicas %d ready %d", s.Status.Model, s.Status.DesiredReplicas, s.Status.Replicas, s.Status.ReadyReplicas)
	if ro := s.Status.Rollout; ro != nil {
		out += fmt.Sprintf(" rollout %s→%s %s (%s)", ro.From, ro.To, ro.Phase, ro.Message)
	}
	for _, e := range s.Status.Endpoints {
		out += fmt.Sprintf(" [%s %s %s %s ready=%t]", e.Replica, e.Model, e.Cluster, e.Address, e.Ready)
	}
	return out
}

func update(t *testing.T, svcs *inference.Service, name string, fn func(*v1alpha1.InferenceService)) {
	t.Helper()
	s, rev, err := svcs.Get(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	fn(s)
	if _, _, err := svcs.Update(t.Context(), s, rev); err != nil {
		t.Fatal(err)
	}
}

func deleteService(t *testing.T, svcs *inference.Service, name string) {
	if _, _, err := svcs.Delete(context.WithoutCancel(t.Context()), name); err != nil && !isNotFound(err) {
		t.Errorf("delete service %s: %v", name, err)
	}
}

func endpointClusters(s *v1alpha1.InferenceService) map[string]bool {
	out := map[string]bool{}
	for _, e := range s.Status.Endpoints {
		if e.Ready {
			out[e.Cluster] = true
		}
	}
	return out
}

func allAddressed(s *v1alpha1.InferenceService) bool {
	for _, e := range s.Status.Endpoints {
		if e.Ready && (e.Address == "" || e.Port != v1alpha1.DefaultServicePort) {
			return false
		}
	}
	return true
}

func allServe(s *v1alpha1.InferenceService, model string) bool {
	for _, e := range s.Status.Endpoints {
		if e.Model != model {
			return false
		}
	}
	return len(s.Status.Endpoints) > 0
}

// replicaJobs lists the service's unfinished replica jobs.
func replicaJobsOf(ctx context.Context, t *testing.T) []*v1alpha1.Job {
	t.Helper()
	res, err := h.jobs.List(ctx, jobs.ListOptions{Queue: "serve", Limit: jobs.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1alpha1.Job
	for _, j := range res.Items {
		if j.Labels[v1alpha1.LabelInferenceService] == "chat" && !j.Status.Phase.Terminal() {
			out = append(out, j)
		}
	}
	return out
}

// placedReplicas counts replica jobs placed or running.
func placedReplicas(ctx context.Context, t *testing.T) int {
	n := 0
	for _, j := range replicaJobsOf(ctx, t) {
		if j.Status.Phase == v1alpha1.JobPlaced || j.Status.Phase == v1alpha1.JobRunning {
			n++
		}
	}
	return n
}

// quotaHeld counts replica jobs waiting with QuotaExceeded.
func quotaHeld(ctx context.Context, t *testing.T, _ *v1alpha1.InferenceService) int {
	n := 0
	for _, j := range replicaJobsOf(ctx, t) {
		if c := condition(j, v1alpha1.JobConditionPlaced); j.Status.Phase == v1alpha1.JobPending && c != nil && c.Reason == "QuotaExceeded" {
			n++
		}
	}
	return n
}

// watchMinReady samples the service's ready replicas every 100 ms until
// the test ends or the returned function is called, which returns the
// lowest count seen.
func watchMinReady(t *testing.T, svcs *inference.Service, name string) func() int32 {
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	lowest := int32(1 << 30)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if s, _, err := svcs.Get(ctx, name); err == nil {
				mu.Lock()
				lowest = min(lowest, s.Status.ReadyReplicas)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(cancel)
	return func() int32 {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return lowest
	}
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
