// SPDX-License-Identifier: Apache-2.0

package realnodes

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// trainerJob is a job manifest of members running the trainer with args,
// placed as placement says (YAML flow), with extra YAML lines under spec.
func trainerJob(name string, members int, placement, specExtra string, args ...string) string {
	return fmt.Sprintf(`apiVersion: shoal.dev/v1alpha1
kind: Job
metadata:
  name: %s
spec:
  queue: realnodes
  gang: {members: %d, gpusPerMember: 8}
  placement: %s
%s  template:
    spec:
%s`, name, members, placement, specExtra, container(devfleet.TrainerImage, args, "", ""))
}

// TestPreemptedTrainerResumesFromItsCheckpoint: a spot trainer's
// checkpoint lines reach the hub through its agent; preempted by a
// production gang (a production filler holds the other node), it saves on
// the notice, and that report ends its 60 s grace on the hub (the job is
// requeued); placed again after the production gang, its new member
// resumes from that checkpoint (env and file); a model version registered
// from the job traces back to it.
func TestPreemptedTrainerResumesFromItsCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("real containers")
	}
	submitJob(t, "realnodes", trainerJob("rn-spot", 1, "{maxClusters: 1}", "  priorityClass: spot\n  preemption: {gracePeriodSeconds: 60}\n",
		"--step-every", "200ms", "--checkpoint-every", "5", "--save-time", "0s"))
	first := waitPhase(t, "rn-spot", v1alpha1.JobRunning, 3*time.Minute).Status.Epoch
	var j *v1alpha1.Job
	poll(t, time.Minute, "the agent passing on member 0's checkpoint lines", func() (bool, error) {
		var err error
		j, err = getJob(t, "rn-spot")
		c := j.Status.Checkpoint
		return err == nil && c != nil && c.Step >= 5 && c.ReportedBy != "" && strings.HasPrefix(c.ReportedBy, "agent:") && c.Epoch == first,
			fmt.Errorf("%v, checkpoint %+v", err, c)
	})

	// A production member holds the other node (not preemptible), so the
	// next production member can only run by preempting the spot one.
	submitJob(t, "realnodes", trainerJob("rn-filler", 1, "{maxClusters: 1}", "  priorityClass: production\n", "--checkpoint-every", "0"))
	waitPhase(t, "rn-filler", v1alpha1.JobRunning, 3*time.Minute)
	t.Logf("rn-filler running at %s", time.Now().UTC().Format(time.RFC3339))
	submitJob(t, "realnodes", trainerJob("rn-urgent", 1, "{maxClusters: 1}", "  priorityClass: production\n", "--until", "5", "--checkpoint-every", "0"))
	var notice time.Time
	poll(t, time.Minute, "rn-spot preempted", func() (bool, error) {
		j, err := getJob(t, "rn-spot")
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPreempted)
		if c != nil && c.Status == metav1.ConditionTrue {
			notice = c.LastTransitionTime.Time
			return true, nil
		}
		return j.Status.Epoch > first, fmt.Errorf("phase %s epoch %d conditions %+v", j.Status.Phase, j.Status.Epoch, j.Status.Conditions)
	})
	// The member saves on SIGTERM at once (--save-time 0s) and waits to be
	// killed: only the hub ending the grace on that report requeues the job
	// before 60 s. (Whether the workload cluster's kubelet then stops the
	// container sooner is its own: see docs/checkpoints.md, Limits.)
	j = waitPhase(t, "rn-spot", v1alpha1.JobPending, 40*time.Second)
	t.Logf("rn-spot requeued at %s, %s after the notice", time.Now().UTC().Format(time.RFC3339), time.Since(notice).Round(time.Second))
	poll(t, 40*time.Second, "the preempted member gone on the hub well within its 60 s grace", func() (bool, error) {
		pods, err := hubCS.CoreV1().Pods(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{
			LabelSelector: v1alpha1.LabelJob + "=rn-spot," + v1alpha1.LabelEpoch + "=" + strconv.FormatInt(first, 10)})
		return err == nil && len(pods.Items) == 0, fmt.Errorf("%v, %d member pods of epoch %d left", err, len(pods.Items), first)
	})
	j, err := getJob(t, "rn-spot")
	if err != nil {
		t.Fatal(err)
	}
	saved := j.Status.Checkpoint
	if saved == nil || saved.Time.Time.Before(notice) || saved.Epoch != first {
		t.Fatalf("checkpoint %+v: want one taken after the notice at %s by epoch %d", saved, notice, first)
	}
	t.Logf("preempted at %s; checkpoint step %d reported at %s; member of epoch %d gone",
		notice.Format(time.RFC3339), saved.Step, saved.ReportedAt.Format(time.RFC3339), first)

	waitPhase(t, "rn-urgent", v1alpha1.JobSucceeded, 3*time.Minute)
	t.Logf("rn-urgent succeeded at %s", time.Now().UTC().Format(time.RFC3339))
	j = waitPhase(t, "rn-spot", v1alpha1.JobRunning, 3*time.Minute)
	t.Logf("rn-spot running again at %s (epoch %d)", time.Now().UTC().Format(time.RFC3339), j.Status.Epoch)
	var log string
	poll(t, time.Minute, "the new member's resume lines", func() (bool, error) {
		for _, p := range hubMemberPods(t, "rn-spot") {
			if p.Labels[v1alpha1.LabelEpoch] == strconv.FormatInt(j.Status.Epoch, 10) {
				log = hubLogs(t, p.Name)
			}
		}
		return strings.Contains(log, "resume: file"), fmt.Errorf("log of epoch %d: %q", j.Status.Epoch, log)
	})
	wantEnv := fmt.Sprintf("resume: env step=%d uri=%s\n", saved.Step, saved.URI)
	wantFile := fmt.Sprintf(`"step":%d,"uri":%q`, saved.Step, saved.URI)
	if !strings.Contains(log, wantEnv) || !strings.Contains(log, wantFile) {
		t.Fatalf("member of epoch %d did not resume from step %d:\n%s", j.Status.Epoch, saved.Step, log)
	}

	// A checkpoint reported through the CLI (a pipeline's way) goes in; an
	// older step than the latest is refused with the reason.
	cur, err := getJob(t, "rn-spot")
	if err != nil || cur.Status.Checkpoint == nil {
		t.Fatalf("rn-spot checkpoint: %v", err)
	}
	next := cur.Status.Checkpoint.Step + 1000
	mustCLI(t, "", "job", "checkpoint", "rn-spot", "--step", strconv.FormatInt(next, 10), "--uri", fmt.Sprintf("s3://ckpt/rn/%d", next))
	if out, err := shoalCLI(t, "", "job", "checkpoint", "rn-spot", "--step", "1", "--uri", "s3://ckpt/rn/1"); err == nil ||
		!strings.Contains(out, "is older") {
		t.Fatalf("an older step was not refused (err %v):\n%s", err, out)
	}

	// A model version made from this training: its lineage, through the
	// CLI and the hub, names the job and the checkpoint it was made from.
	mustCLI(t, "", "model", "register", "--model", "rn-model", "--version", "1.0", "--artifact", "s3://models/rn-model/1.0",
		"--digest", "sha256:"+strings.Repeat("ab", 32), "--framework", "pytorch", "--job", "rn-spot")
	out := mustCLI(t, "", "model", "lineage", "rn-model@1.0")
	if !strings.Contains(out, "trained by job rn-spot (queue realnodes") || !strings.Contains(out, "from checkpoint step ") {
		t.Fatalf("lineage does not name the job and its checkpoint:\n%s", out)
	}
}

// poll checks cond every half second until it holds or timeout passes.
func poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v", what, timeout, last)
	}
}
