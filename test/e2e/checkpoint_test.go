// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
)

// TestPreemptedGangResumesFromItsCheckpoint: a spot gang reports a
// checkpoint, is preempted by a production gang and, placed again once the
// production gang is gone, starts in its workload cluster with the resume
// contract of that checkpoint (env and annotation, copied to the local
// pods); an older step reported afterwards is refused.
func TestPreemptedGangResumesFromItsCheckpoint(t *testing.T) {
	skipShort(t)
	c := spare()
	submit(t, newJob("ckpt-spot", "e2e", 16, 8, onCluster(c), func(j *v1alpha1.Job) {
		j.Spec.PriorityClass = v1alpha1.PrioritySpot
		g := int64(1)
		j.Spec.Preemption.GracePeriodSeconds = &g
	}))
	first := waitPhase(t, "ckpt-spot", v1alpha1.JobRunning, time.Minute).Status.Epoch
	r := v1alpha1.CheckpointReport{Step: 100, URI: "s3://e2e/ckpt-spot/step-100"}
	if _, _, err := h.jobs.ReportCheckpoint(t.Context(), "ckpt-spot", r, "e2e"); err != nil {
		t.Fatal(err)
	}
	submit(t, newJob("ckpt-prod", "e2e", 2, 8, onCluster(c), func(j *v1alpha1.Job) {
		j.Spec.PriorityClass = v1alpha1.PriorityProduction
	}))
	waitPhase(t, "ckpt-prod", v1alpha1.JobRunning, time.Minute)
	waitPhase(t, "ckpt-spot", v1alpha1.JobPending, 30*time.Second)
	cancelAndWaitGone(t, "ckpt-prod")
	j := waitPhase(t, "ckpt-spot", v1alpha1.JobRunning, time.Minute)
	if j.Status.Epoch <= first || j.Status.Checkpoint == nil || j.Status.Checkpoint.Step != 100 {
		t.Fatalf("epoch %d (first %d), checkpoint %+v", j.Status.Epoch, first, j.Status.Checkpoint)
	}
	eventually(t, 30*time.Second, "every local member resuming from step 100", func(ctx context.Context) (bool, error) {
		local, err := localPods(ctx, "ckpt-spot")
		if err != nil {
			return false, err
		}
		n := 0
		for _, ps := range local {
			for i := range ps {
				p := &ps[i]
				if p.Annotations[v1alpha1.AnnotationEpoch] != strconv.FormatInt(j.Status.Epoch, 10) {
					continue
				}
				if err := resumes(p, r); err != nil {
					return false, fmt.Errorf("%s: %w", p.Name, err)
				}
				n++
			}
		}
		return n == 16, fmt.Errorf("%d of 16 members of epoch %d", n, j.Status.Epoch)
	})
	r.Step = 90
	if _, _, err := h.jobs.ReportCheckpoint(t.Context(), "ckpt-spot", r, "e2e"); !errors.Is(err, errs.ErrFailedPrecondition) {
		t.Fatalf("an older step: %v", err)
	}
}

// resumes checks a local member pod's resume contract for r.
func resumes(p *corev1.Pod, r v1alpha1.CheckpointReport) error {
	if p.Annotations[v1alpha1.AnnotationResumeCheckpoint] == "" {
		return errors.New("no resume annotation")
	}
	for _, c := range p.Spec.Containers {
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if env[v1alpha1.EnvResumeURI] != r.URI || env[v1alpha1.EnvResumeStep] != strconv.FormatInt(r.Step, 10) {
			return fmt.Errorf("container %s resume env %q %q", c.Name, env[v1alpha1.EnvResumeURI], env[v1alpha1.EnvResumeStep])
		}
	}
	return nil
}
