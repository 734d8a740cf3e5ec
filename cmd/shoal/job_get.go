// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func newJobGetCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "get NAME...",
		Short: "Show jobs by name",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			cl, done, err := jobsClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			var jobs []*v1alpha1.Job
			for _, name := range args {
				obj, err := cl.Get(cmd.Context(), &shoalv1.GetJobRequest{Name: name})
				if err != nil {
					return outCallError("get job/"+name, err)
				}
				j, err := decodeJob(obj)
				if err != nil {
					return err
				}
				jobs = append(jobs, j)
			}
			var v any = outList(jobs)
			if len(jobs) == 1 {
				v = jobs[0]
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, v); ok {
				return err
			}
			return printJobTable(cmd.OutOrStdout(), jobs, output == "wide", time.Now())
		},
	}
	outFlag(cmd, &output)
	return cmd
}

func newJobListCommand() *cobra.Command {
	var output string
	var req shoalv1.ListJobsRequest
	var limit int64
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List jobs, optionally by queue, phase or cluster",
		Example: "  shoal job list --queue research/nlp --phase Pending\n  shoal job list --cluster eu1 -o wide",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			if req.Phase != "" && !v1alpha1.JobPhase(req.Phase).Valid() {
				return fmt.Errorf("unknown phase %q: use one of %v", req.Phase, v1alpha1.JobPhases)
			}
			cl, done, err := jobsClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			jobs, more, err := listJobs(cmd, cl, &req, limit)
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, outList(jobs)); ok {
				return err
			}
			if len(jobs) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No jobs found.")
				return nil
			}
			if err := printJobTable(cmd.OutOrStdout(), jobs, output == "wide", time.Now()); err != nil {
				return err
			}
			if more != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "(more jobs: add --continue %s)\n", more)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Queue, "queue", "", "only jobs of this queue")
	f.StringVar(&req.Phase, "phase", "", "only jobs in this phase (Pending, Placed, Running, Succeeded, Failed, Cancelled)")
	f.StringVar(&req.Cluster, "cluster", "", "only jobs with members on this cluster")
	f.StringVar(&req.Owner, "owner", "", "only jobs of this user (status.owner)")
	_ = cmd.RegisterFlagCompletionFunc("queue", completeQueueNames)
	_ = cmd.RegisterFlagCompletionFunc("cluster", completeClusterNames)
	f.Int64Var(&limit, "limit", 0, "show at most this many jobs (0: all)")
	req.Options = &shoalv1.ListOptions{}
	f.StringVar(&req.Options.Continue, "continue", "", "continue a list cut by --limit")
	_ = cmd.RegisterFlagCompletionFunc("phase", cobra.FixedCompletions(
		[]string{"Pending", "Placed", "Running", "Succeeded", "Failed", "Cancelled"}, cobra.ShellCompDirectiveNoFileComp))
	outFlag(cmd, &output)
	return cmd
}

// listJobs pages through List until limit jobs (0: all) and returns the
// continue token when more remain.
func listJobs(cmd *cobra.Command, cl shoalv1.JobsClient, req *shoalv1.ListJobsRequest, limit int64) ([]*v1alpha1.Job, string, error) {
	var out []*v1alpha1.Job
	for {
		req.Options.Limit = 500
		if limit > 0 {
			req.Options.Limit = min(500, limit-int64(len(out)))
		}
		resp, err := cl.List(cmd.Context(), req)
		if err != nil {
			return nil, "", outCallError("list jobs", err)
		}
		for _, o := range resp.Items {
			j, err := decodeJob(o)
			if err != nil {
				return nil, "", err
			}
			out = append(out, j)
		}
		next := resp.GetMeta().GetContinue()
		if next == "" || (limit > 0 && int64(len(out)) >= limit) {
			return out, next, nil
		}
		req.Options.Continue = next
	}
}
