// SPDX-License-Identifier: Apache-2.0

package inference_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
	"github.com/shoal-dev/shoal/hub/inference"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/models"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/hubtest"
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(hubtest.Run(m, "inference"))
}

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// env is a store with model versions chat@1 and chat@2, the inference
// service and its controller on a fake clock, and two Ready clusters.
type env struct {
	*hubtest.Env
	svc  *inference.Service
	ctrl *inference.Controller
}

func newEnv(t *testing.T) *env {
	e := &env{Env: hubtest.New(t)}
	ms := models.New(e.Store, e.Jobs, models.WithClock(e.Clock))
	for _, v := range []string{"1", "2"} {
		if _, _, _, err := ms.Register(e.Ctx, &v1alpha1.ModelVersion{Spec: v1alpha1.ModelVersionSpec{Model: "chat", Version: v,
			ArtifactURI: "s3://models/chat/" + v, Digest: digest}}, "alice", nil); err != nil {
			t.Fatal(err)
		}
	}
	e.svc = inference.New(e.Store, ms, e.Jobs, inference.WithClock(e.Clock))
	clusters := func(context.Context, *v1alpha1.InferenceService) ([]string, error) {
		return []string{"east", "west"}, nil
	}
	e.ctrl = inference.NewController(e.svc, clusters, e.Clock, time.Second)
	return e
}

func chat(mutate ...func(*v1alpha1.InferenceService)) *v1alpha1.InferenceService {
	s := &v1alpha1.InferenceService{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindInferenceService},
		ObjectMeta: metav1.ObjectMeta{Name: "chat"},
		Spec: v1alpha1.InferenceServiceSpec{Queue: "research", Model: "chat@1", Replicas: v1alpha1.ServiceReplicas{Min: 2},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "srv:1"}}}}}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// TestCreateRefusesBadServicesAndStoresNothing: every refusal names the
// field, says why, and stores nothing.
func TestCreateRefusesBadServicesAndStoresNothing(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name   string
		mutate func(*v1alpha1.InferenceService)
		is     error
		want   string
	}{
		{"unregistered model", func(s *v1alpha1.InferenceService) { s.Spec.Model = "chat@9" }, errs.ErrFailedPrecondition, "chat@9 is not registered"},
		{"model not MODEL@VERSION", func(s *v1alpha1.InferenceService) { s.Spec.Model = "chat" }, nil, "spec.model"},
		{"unknown queue", func(s *v1alpha1.InferenceService) { s.Spec.Queue = "nowhere" }, nil, "nowhere"},
		{"max below min", func(s *v1alpha1.InferenceService) { s.Spec.Replicas.Max = 1 }, nil, "spec.replicas.max"},
		{"scale to zero without autoscaling", func(s *v1alpha1.InferenceService) { s.Spec.Replicas.Min = 0 }, nil, "spec.replicas.min"},
		{"reserved env", func(s *v1alpha1.InferenceService) {
			s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: v1alpha1.EnvModel, Value: "x"}}
		}, nil, "spec.template.spec.containers[0].env[0].name"},
		{"no container", func(s *v1alpha1.InferenceService) { s.Spec.Template.Spec.Containers = nil }, nil, "spec.template.spec.containers"},
		{"name too long for its replicas", func(s *v1alpha1.InferenceService) { s.Name = strings.Repeat("a", 52) }, nil, "metadata.name"},
		{"bad metric", func(s *v1alpha1.InferenceService) {
			s.Spec.Autoscaling = &v1alpha1.ServiceAutoscaling{TargetPerReplica: 1, Metric: &v1alpha1.ServiceMetric{Name: "in flight"}}
		}, nil, "spec.autoscaling.metric.name"},
	} {
		_, _, err := e.svc.Create(e.Ctx, chat(c.mutate), "alice")
		if err == nil || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("%s: %v; want an error naming %q", c.name, err, c.want)
		}
	}
	if got, _, err := e.svc.List(e.Ctx, ""); err != nil || len(got) != 0 {
		t.Fatalf("after refusals: %d services stored (%v)", len(got), err)
	}
	if _, _, err := e.svc.Create(e.Ctx, chat(), "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.Create(e.Ctx, chat(), "alice"); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("a second create: %v, want AlreadyExists", err)
	}
	s, rev, _ := e.svc.Get(e.Ctx, "chat")
	s.Spec.Queue = "other"
	if _, _, err := e.svc.Update(e.Ctx, s, rev); err == nil || !strings.Contains(err.Error(), "spec.queue") {
		t.Fatalf("changing the queue: %v, want refused", err)
	}
	if _, _, err := e.svc.ReportLoad(e.Ctx, "chat", "user:gw", -1); err == nil {
		t.Fatal("a negative load was accepted")
	}
}

// TestControllerCreatesScalesRollsOutAndDeletes drives the controller by
// hand over the store: replicas are jobs of the service's queue, owned by
// its owner, pinned to different clusters; a model change makes replicas
// of the new revision while the old stay (none ready: the jobs never run
// here); deleting the service cancels them all.
func TestControllerCreatesScalesRollsOutAndDeletes(t *testing.T) {
	e := newEnv(t)
	if _, _, err := e.svc.Create(e.Ctx, chat(), "alice"); err != nil {
		t.Fatal(err)
	}
	if err := e.ctrl.ReconcileAll(e.Ctx); err != nil {
		t.Fatal(err)
	}
	reps := replicas(t, e)
	if len(reps) != 2 {
		t.Fatalf("%d replicas, want 2", len(reps))
	}
	pins := map[string]bool{}
	for _, j := range reps {
		if j.Status.Owner != "alice" || j.Spec.Queue != "research" || j.Spec.PriorityClass != v1alpha1.PriorityProduction ||
			v1alpha1.ServiceModelOf(j) != "chat@1" || !strings.HasPrefix(j.Name, "chat-") {
			t.Fatalf("replica %s: owner %q queue %q priority %q model %q", j.Name, j.Status.Owner, j.Spec.Queue, j.Spec.PriorityClass, v1alpha1.ServiceModelOf(j))
		}
		pins[j.Annotations[v1alpha1.AnnotationSpreadPin]] = true
		env := map[string]string{}
		for _, v := range j.Spec.Template.Spec.Containers[0].Env {
			env[v.Name] = v.Value
		}
		if env[v1alpha1.EnvModel] != "chat@1" || env[v1alpha1.EnvModelURI] != "s3://models/chat/1" || env[v1alpha1.EnvService] != "chat" {
			t.Fatalf("replica env %v", env)
		}
	}
	if !pins["east"] || !pins["west"] {
		t.Fatalf("pins %v, want one replica pinned to each cluster", pins)
	}
	// A second pass changes nothing.
	if err := e.ctrl.ReconcileAll(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(replicas(t, e)); n != 2 {
		t.Fatalf("second pass: %d replicas", n)
	}
	s, rev, _ := e.svc.Get(e.Ctx, "chat")
	if s.Status.DesiredReplicas != 2 || s.Status.Model != "chat@1" || s.Status.Replicas != 2 || s.Status.ReadyReplicas != 0 {
		t.Fatalf("status %+v", s.Status)
	}
	s.Spec.Model = "chat@2"
	if _, _, err := e.svc.Update(e.Ctx, s, rev); err != nil {
		t.Fatal(err)
	}
	if err := e.ctrl.ReconcileAll(e.Ctx); err != nil {
		t.Fatal(err)
	}
	byModel := map[string]int{}
	for _, j := range replicas(t, e) {
		byModel[v1alpha1.ServiceModelOf(j)]++
	}
	if byModel["chat@1"] != 2 || byModel["chat@2"] != 1 {
		t.Fatalf("replicas by model %v: want the 2 old kept and 1 new (surge 1) while none is ready", byModel)
	}
	if _, _, err := e.svc.Delete(e.Ctx, "chat"); err != nil {
		t.Fatal(err)
	}
	if n := len(replicas(t, e)); n != 0 {
		t.Fatalf("%d replicas left unfinished after the delete", n)
	}
}

// replicas lists the service's unfinished replica jobs.
func replicas(t *testing.T, e *env) []*v1alpha1.Job {
	t.Helper()
	res, err := e.Jobs.List(e.Ctx, jobs.ListOptions{Queue: "research"})
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

// TestSteadyPassesWriteNothing: a pass that changes nothing leaves the
// service's revision alone (a write per service per second otherwise).
func TestSteadyPassesWriteNothing(t *testing.T) {
	e := newEnv(t)
	if _, _, err := e.svc.Create(e.Ctx, chat(), "alice"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first creates the replicas, the second lists them
		if err := e.ctrl.ReconcileAll(e.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	_, before, _ := e.svc.Get(e.Ctx, "chat")
	for range 3 {
		if err := e.ctrl.ReconcileAll(e.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, after, _ := e.svc.Get(e.Ctx, "chat"); after != before {
		t.Fatalf("steady passes rewrote the service: revision %d → %d", before, after)
	}
}
