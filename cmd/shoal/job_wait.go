// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// storedJob is a job as the hub stored it, with the store revision.
type storedJob struct {
	job      *v1alpha1.Job
	revision int64
}

// errJobEnded is wrapped by waitForJobs' error for a job that failed or
// was cancelled while waited on.
var errJobEnded = errors.New("job ended without running")

// waitForJobs follows each job, one after the other, through the hub's
// watch until every member runs (or the job succeeded), drawing its
// progress on w: each member counts one step when it is prepared and one
// when it runs, so the bar moves with the two-phase dispatch.
func waitForJobs(ctx context.Context, w io.Writer, cl shoalv1.JobsClient, jobs []storedJob) error {
	for _, s := range jobs {
		if err := waitForJob(ctx, w, cl, s); err != nil {
			return err
		}
	}
	return nil
}

func waitForJob(ctx context.Context, w io.Writer, cl shoalv1.JobsClient, s storedJob) error {
	p := newProgress(w, "job/"+s.job.Name)
	defer p.Finish()
	if done, err := showJob(p, s.job); done || err != nil {
		return err
	}
	stream, err := cl.Watch(ctx, &shoalv1.WatchJobsRequest{Revision: s.revision, Name: s.job.Name})
	if err != nil {
		return outCallError("watch job/"+s.job.Name, err)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil || pastDeadline(ctx) {
				return fmt.Errorf("job/%s: gave up waiting: %w", s.job.Name, context.Cause(ctx))
			}
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("job/%s: the hub ended the watch", s.job.Name)
			}
			return outCallError("watch job/"+s.job.Name, err)
		}
		if ev.Type == shoalv1.WatchEvent_DELETED {
			return fmt.Errorf("job/%s was deleted: %w", s.job.Name, errJobEnded)
		}
		j, err := decodeJob(ev.Object)
		if err != nil {
			return err
		}
		if done, err := showJob(p, j); done || err != nil {
			return err
		}
	}
}

// showJob draws the job's progress and reports whether the wait is over:
// every member runs, or the job succeeded; a failed or cancelled job is an
// error naming its Finished reason.
func showJob(p *progress, j *v1alpha1.Job) (bool, error) {
	total := int(jobMemberCount(j))
	var prepared, running int
	for _, m := range j.Status.Members {
		switch m.Phase {
		case v1alpha1.MemberPrepared:
			prepared++
		case v1alpha1.MemberRunning, v1alpha1.MemberSucceeded:
			prepared++
			running++
		}
	}
	st := &j.Status
	on := strings.Join(st.Clusters(), ",")
	switch st.Phase {
	case v1alpha1.JobRunning, v1alpha1.JobSucceeded:
		p.Update(2*total, 2*total, fmt.Sprintf("%s on %s: %d/%d members running", st.Phase, outDash(on), total, total))
		return true, nil
	case v1alpha1.JobFailed, v1alpha1.JobCancelled:
		msg := string(st.Phase)
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.JobConditionFinished); c != nil {
			msg = fmt.Sprintf("%s (%s: %s)", st.Phase, c.Reason, c.Message)
		}
		p.Update(prepared+running, 2*total, msg)
		return true, fmt.Errorf("job/%s %s: %w", j.Name, msg, errJobEnded)
	case v1alpha1.JobPlaced:
		dispatch := ""
		if st.Dispatch != nil {
			dispatch = " (" + string(st.Dispatch.Phase) + ")"
		}
		p.Update(prepared+running, 2*total, fmt.Sprintf("Placed on %s%s: %d/%d prepared, %d/%d running",
			outDash(on), dispatch, prepared, total, running, total))
	default:
		why := "waiting for placement"
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.JobConditionPlaced); c != nil && c.Status != "True" {
			why = c.Reason
			if c.Message != "" {
				why += ": " + c.Message
			}
		}
		p.Update(0, 2*total, "Pending: "+why)
	}
	return false, nil
}

// jobMemberCount is the gang's members (all roles' for a job with roles).
func jobMemberCount(j *v1alpha1.Job) int32 {
	if len(j.Spec.Roles) == 0 {
		return j.Spec.Gang.Members
	}
	var n int32
	for _, r := range j.Spec.Roles {
		n += r.Members
	}
	return n
}
