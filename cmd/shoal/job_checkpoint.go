// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func newJobCheckpointCommand() *cobra.Command {
	return newJobCheckpointCommandWith(jobsClient)
}

// newJobCheckpointCommandWith is `shoal job checkpoint` with the hub's Jobs
// client from dial (a fake in tests).
func newJobCheckpointCommandWith(dial func(*cobra.Command) (shoalv1.JobsClient, func(), error)) *cobra.Command {
	var output, uri, at string
	var step int64
	cmd := &cobra.Command{
		Use:   "checkpoint NAME --step N --uri URI [--time RFC3339]",
		Short: "Report a checkpoint a job took; a gang placed again resumes from the latest one",
		Long: "Reports a checkpoint the job took: the training step it holds and where it is (an absolute URI: " +
			"s3://, gs://, file:///, pvc://…), taken at --time (RFC 3339; default: when the hub receives it). " +
			"For training scripts and pipelines that hold the job owner's credentials.\n\n" +
			"The hub keeps the latest checkpoint per job (status.checkpoint; `shoal job describe` shows it) and " +
			"refuses a step older than it. A gang placed again (after preemption, a restart or a drain) resumes " +
			"from it: every container of every member gets " + v1alpha1.EnvResumeURI + " and " +
			v1alpha1.EnvResumeStep + " and the file " + v1alpha1.ResumeMountPath + "/" + v1alpha1.ResumeFileName +
			" (the checkpoint in JSON). A preempted job that reports a checkpoint taken after the preemption " +
			"notice is stopped at once instead of at the end of its grace period " +
			"(spec.preemption.gracePeriodSeconds).\n\n" +
			"Instead of running this command, the job's member 0 may print a line on its standard output:\n\n" +
			"  " + v1alpha1.CheckpointLinePrefix + `{"step":1200,"uri":"s3://ckpt/run/step-1200"}` + "\n\n" +
			"which the agent of its cluster reports to the hub (docs/checkpoints.md).",
		Example: "  shoal job checkpoint llama-pretrain --step 1200 --uri s3://ckpt/run/step-1200\n" +
			"  shoal job checkpoint llama-pretrain --step 1300 --uri s3://ckpt/run/step-1300 --time 2026-01-01T12:00:00Z -o yaml",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			req, err := checkpointRequest(cmd, args[0], step, uri, at)
			if err != nil {
				return err
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			obj, err := cl.ReportCheckpoint(cmd.Context(), req)
			if err != nil {
				return outCallError("checkpoint job/"+req.Name, err)
			}
			j, err := decodeJob(obj)
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, j); ok {
				return err
			}
			return printCheckpointRecorded(cmd.OutOrStdout(), req, j)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&step, "step", 0, "the training step the checkpoint holds (required; 0 or more, never below the last reported)")
	f.StringVar(&uri, "uri", "", "where the checkpoint is, an absolute URI: s3://…, gs://…, file:///…, pvc://… (required)")
	f.StringVar(&at, "time", "", "when the checkpoint was taken, RFC 3339 (default: when the hub receives the report)")
	outFlag(cmd, &output)
	return cmd
}

// checkpointRequest checks the flags of `shoal job checkpoint` and returns
// the request they make.
func checkpointRequest(cmd *cobra.Command, name string, step int64, uri, at string) (*shoalv1.ReportCheckpointRequest, error) {
	switch {
	case !cmd.Flags().Changed("step"):
		return nil, fmt.Errorf("--step is required: the training step the checkpoint holds, e.g. --step 1200")
	case step < 0:
		return nil, fmt.Errorf("--step %d: must be 0 or more", step)
	case strings.TrimSpace(uri) == "":
		return nil, fmt.Errorf("--uri is required: where the checkpoint is, e.g. --uri s3://ckpt/run/step-%d", step)
	}
	if at != "" {
		if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
			return nil, fmt.Errorf("--time %q: not an RFC 3339 time such as 2026-01-01T12:00:00Z", at)
		}
	}
	return &shoalv1.ReportCheckpointRequest{Name: name, Step: step, Uri: uri, Time: at}, nil
}

// printCheckpointRecorded writes the line that says the hub recorded the
// checkpoint: the job's status.checkpoint as the hub answered it, or the
// request where the answer has none.
func printCheckpointRecorded(w io.Writer, req *shoalv1.ReportCheckpointRequest, j *v1alpha1.Job) error {
	step, uri, count := req.Step, req.Uri, ""
	if c := j.Status.Checkpoint; c != nil {
		step, uri, count = c.Step, c.URI, fmt.Sprintf(" (%d reported)", c.Count)
	}
	_, err := fmt.Fprintf(w, "job/%s: checkpoint step %d at %s recorded%s\n", req.Name, step, uri, count)
	return err
}
