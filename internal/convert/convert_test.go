// SPDX-License-Identifier: Apache-2.0

package convert

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// droppedPaths is the paths of a result's dropped fields.
func droppedPaths(r *Result) []string {
	out := make([]string, len(r.Dropped))
	for i, d := range r.Dropped {
		out[i], _, _ = strings.Cut(d, ": ")
	}
	return out
}

// roundTrip renders the job, decodes it as shoal job submit does, defaults
// and validates it.
func roundTrip(t *testing.T, j *v1alpha1.Job) *v1alpha1.Job {
	t.Helper()
	y, err := YAML(j)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), "status") || strings.Contains(string(y), "creationTimestamp") {
		t.Errorf("rendered job has status or creation times:\n%s", y)
	}
	back, err := v1alpha1.DecodeJob(y)
	if err != nil {
		t.Fatalf("decode the rendered job: %v\n%s", err, y)
	}
	v1alpha1.SetJobDefaults(back)
	if errs := v1alpha1.ValidateJob(back); len(errs) > 0 {
		t.Errorf("converted job invalid: %v\n%s", errs, y)
	}
	return back
}

func TestConvertPyTorchJob(t *testing.T) {
	res, err := Convert(read(t, "pytorchjob.yaml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := roundTrip(t, res.Job)
	if j.Name != "llama-ft" || j.Spec.Queue != "research/nlp" || j.Spec.PriorityClass != "training" ||
		j.Labels["team"] != "nlp" || j.Annotations["owner"] != "alice" {
		t.Errorf("metadata/queue/priority: %s %s %s %v %v", j.Name, j.Spec.Queue, j.Spec.PriorityClass, j.Labels, j.Annotations)
	}
	if mr := j.Spec.FailurePolicy.MaxRestarts; mr == nil || *mr != 2 {
		t.Errorf("maxRestarts = %v, want 2 from backoffLimit", mr)
	}
	rs := j.Spec.Roles
	if len(rs) != 2 || rs[0].Name != "master" || rs[0].Members != 1 || rs[0].GPUsPerMember != 8 ||
		rs[1].Name != "worker" || rs[1].Members != 2 || rs[1].GPUsPerMember != 8 {
		t.Fatalf("roles = %+v", rs)
	}
	w := rs[1].Template
	if w.Labels["app"] != "llama" || w.Spec.Containers[0].Image != "ghcr.io/example/llama-train:1.4" ||
		len(w.Spec.Tolerations) != 1 || w.Spec.Containers[0].Resources.Limits.Memory().String() != "512Gi" {
		t.Errorf("worker template not carried whole: %+v", w)
	}
	want := []string{"metadata.creationTimestamp", "metadata.namespace", "metadata.resourceVersion", "metadata.uid",
		"spec.elasticPolicy", "spec.nprocPerNode",
		"spec.pytorchReplicaSpecs.Master.restartPolicy", "spec.pytorchReplicaSpecs.Worker.restartPolicy",
		"spec.runPolicy.cleanPodPolicy", "spec.runPolicy.schedulingPolicy.minAvailable",
		"spec.runPolicy.ttlSecondsAfterFinished", "status"}
	if got := droppedPaths(res); !slices.Equal(got, want) {
		t.Errorf("dropped = %q\nwant      %q", got, want)
	}
	// --queue wins over the source's queue.
	res, err = Convert(read(t, "pytorchjob.yaml"), Options{Queue: "ops"})
	if err != nil || res.Job.Spec.Queue != "ops" {
		t.Errorf("with --queue: queue %q err %v", res.Job.Spec.Queue, err)
	}
}

func TestConvertJobSet(t *testing.T) {
	res, err := Convert(read(t, "jobset.yaml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := roundTrip(t, res.Job)
	if j.Spec.Queue != DefaultQueue || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, "spec.queue") }) {
		t.Errorf("queue %q notes %q, want the default queue noted", j.Spec.Queue, res.Notes)
	}
	if mr := j.Spec.FailurePolicy.MaxRestarts; mr == nil || *mr != 1 {
		t.Errorf("maxRestarts = %v, want 1", mr)
	}
	rs := j.Spec.Roles
	if len(rs) != 2 || rs[0].Name != "launcher" || rs[0].Members != 1 || rs[0].GPUsPerMember != 0 ||
		rs[1].Name != "worker" || rs[1].Members != 4 || rs[1].GPUsPerMember != 4 {
		t.Fatalf("roles = %+v", rs)
	}
	if c := rs[0].Template.Spec.Containers[0]; c.Name != "mpi-launcher" || c.Command[0] != "mpirun" {
		t.Errorf("launcher container %+v", c)
	}
	if v := rs[1].Template.Spec.Volumes; len(v) != 1 || v[0].EmptyDir == nil {
		t.Errorf("worker volumes %+v, want the emptyDir kept", v)
	}
	want := []string{"metadata.namespace", "spec.failurePolicy.rules", "spec.network",
		"spec.replicatedJobs[0].template.spec.backoffLimit", "spec.replicatedJobs[1].dependsOn",
		"spec.replicatedJobs[1].template.metadata", "spec.replicatedJobs[1].template.spec.completionMode",
		"spec.startupPolicy", "spec.successPolicy"}
	if got := droppedPaths(res); !slices.Equal(got, want) {
		t.Errorf("dropped = %q\nwant      %q", got, want)
	}
}

func TestConvertUnknownFieldsAreReported(t *testing.T) {
	in := `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: x}
spec:
  brandNew: true
  replicatedJobs:
  - name: w
    replicas: 1
    extra: 1
    template: {spec: {template: {spec: {containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}]}}}}
`
	res, err := Convert([]byte(in), Options{Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if got := droppedPaths(res); !slices.Equal(got, []string{"spec.brandNew", "spec.replicatedJobs[0].extra"}) {
		t.Errorf("dropped = %q", got)
	}
}

func TestConvertUnreadable(t *testing.T) {
	for name, in := range map[string]string{
		"not yaml":          "kind: [",
		"other kind":        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\n",
		"no replica specs":  "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: a}\nspec: {}\n",
		"bad replicas":      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: a}\nspec: {pytorchReplicaSpecs: {Worker: {replicas: [1]}}}\n",
		"bad template":      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: a}\nspec: {pytorchReplicaSpecs: {Worker: {template: {spec: {containerz: []}}}}}\n",
		"no replicatedJobs": "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: a}\nspec: {}\n",
		"empty":             "",
	} {
		if _, err := Convert([]byte(in), Options{}); !errors.Is(err, ErrUnreadable) {
			t.Errorf("%s: err = %v, want ErrUnreadable", name, err)
		}
	}
}
