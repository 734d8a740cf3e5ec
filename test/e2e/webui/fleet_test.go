// SPDX-License-Identifier: Apache-2.0

package webui_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// shoal runs the CLI as the fleet's admin.
func shoal(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(bins, "shoal"), append([]string{"--config", env.Shoal.Config}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("shoal %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// gang is a job manifest: members of gpus GPUs each of one product, with
// an optional required topology level.
func gang(name, queue string, members, gpus int, product, required string) string {
	topo := ""
	if required != "" {
		topo = "\n    topology: {required: " + required + "}"
	}
	return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata: {name: %s}
spec:
  queue: %s
  gang: {members: %d, gpusPerMember: %d}
  placement:
    gpuProducts: [%s]%s
  template:
    spec:
      containers: [{name: main, image: busybox}]
`, name, queue, members, gpus, product, topo)
}

// Jobs of the demo-like fleet.
const (
	jobLLM     = "train-llm"   // research/nlp, 4 x 8 H100
	jobNVL     = "nvl-train"   // research, 18 x 4 GB200 in one NVLink domain
	jobBatch   = "batch-eval"  // batch, 2 x 2 A100
	jobWaiting = "pretrain-xl" // research, 20 x 8 H100: more than the fleet has
	jobLive    = "live-job"    // submitted while a page is open

	poolA100    = "a100" // the A100 nodes, scale to zero
	serviceChat = "chat" // 1 replica of 1 A100 GPU in batch
)

// setUpFleet creates the queues and jobs the pages show and waits until the
// three gangs run and the big one waits with the scheduler's reason.
func setUpFleet(t *testing.T, api *restAPI) {
	t.Helper()
	shoal(t, "", "queue", "create", "research", "--gpu-quota", "h100=64,gb200=72")
	shoal(t, "", "queue", "create", "research/nlp", "--gpu-quota", "h100=32")
	shoal(t, "", "queue", "create", "batch", "--gpu-quota", "a100=16", "--borrowing-limit", "a100=0")
	out := shoal(t, gang(jobLLM, "research/nlp", 4, 8, "NVIDIA-H100-80GB-HBM3", "")+"---\n"+
		gang(jobNVL, "research", 18, 4, "NVIDIA-GB200", "nvlink")+"---\n"+
		gang(jobBatch, "batch", 2, 2, "NVIDIA-A100-SXM4-80GB", ""), "job", "submit", "-f", "-", "--wait", "--timeout", "3m")
	// --wait's progress (not a terminal: one line per change) ends with each gang running, two steps a member.
	for _, want := range []string{"job/" + jobLLM + ": 8/8 Running on h100-1: 4/4 members running",
		"job/" + jobNVL + ": 36/36 Running on gb200-2: 18/18 members running", "job/" + jobBatch + ": 4/4 Running on a100-3: 2/2 members running"} {
		if !strings.Contains(out, want) {
			t.Errorf("job submit --wait printed no %q:\n%s", want, out)
		}
	}
	t.Logf("job submit --wait:\n%s", out)
	// A GPU pool of the A100 nodes, and an inference service with one
	// replica of one A100 GPU in the batch queue.
	shoal(t, "", "pool", "create", poolA100, "--product", "NVIDIA-A100-SXM4-80GB", "--scale-to-zero")
	shoal(t, "", "model", "register", "--model", "chat", "--version", "1.0", "--artifact", "s3://models/chat/1.0",
		"--digest", "sha256:"+strings.Repeat("ab", 32), "--framework", "pytorch")
	shoal(t, `apiVersion: shoal.dev/v1alpha1
kind: InferenceService
metadata: {name: `+serviceChat+`}
spec:
  queue: batch
  model: chat@1.0
  replicas: {min: 1}
  gpusPerMember: 1
  port: 8000
  placement: {gpuProducts: [NVIDIA-A100-SXM4-80GB]}
  template:
    spec:
      containers: [{name: server, image: busybox}]
`, "service", "create", "-f", "-")
	waitFor(t, "service "+serviceChat+" with 1 ready replica and the pool's status", func() bool {
		ss, ps := api.services(t), api.pools(t)
		return len(ss) == 1 && ss[0].Status.ReadyReplicas == 1 && len(ss[0].Status.Endpoints) == 1 &&
			len(ps) == 1 && ps[0].Status.Nodes > 0
	})
	shoal(t, gang(jobWaiting, "research", 20, 8, "NVIDIA-H100-80GB-HBM3", ""), "job", "submit", "-f", "-")
	waitJob(t, api, jobWaiting, func(j *v1alpha1.Job) bool {
		c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPlaced)
		return c != nil && c.Status == "False" && c.Reason != ""
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func waitJob(t *testing.T, api *restAPI, name string, ok func(*v1alpha1.Job) bool) *v1alpha1.Job {
	t.Helper()
	var j *v1alpha1.Job
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		j = api.job(t, name)
		return ok(j), nil
	})
	if err != nil {
		t.Fatalf("job %s: %v; status %+v", name, err, j.Status)
	}
	return j
}
