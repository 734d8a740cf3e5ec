// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// addJobCommands adds `shoal job` to root.
func addJobCommands(root *cobra.Command) {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Submit, inspect, watch, cancel and delete gang jobs",
		Long: "A job is a gang of members placed all or none on the fleet's GPUs: identical members " +
			"(spec.gang, spec.template) or several roles (spec.roles) " +
			"(apiVersion " + v1alpha1.APIVersion + ", kind " + v1alpha1.KindJob + "; see docs/api.md and examples/).",
	}
	cmd.AddCommand(newJobSubmitCommand(), withJobCompletion(newJobGetCommand()), newJobListCommand(),
		withJobCompletion(newJobDescribeCommand()), withJobCompletion(newJobWatchCommand()),
		withJobCompletion(newJobCancelCommand()), withJobCompletion(newJobDeleteCommand()),
		withJobCompletion(newJobCheckpointCommand()), newJobConvertCommand())
	root.AddCommand(cmd)
}

// jobsClient dials the hub and returns a Jobs client and the connection's closer.
func jobsClient(cmd *cobra.Command) (shoalv1.JobsClient, func(), error) {
	conn, err := dialHub(cmd)
	if err != nil {
		return nil, nil, err
	}
	return shoalv1.NewJobsClient(conn), func() { _ = conn.Close() }, nil
}

// decodeJob reads a Job from an API object.
func decodeJob(o *shoalv1.Object) (*v1alpha1.Job, error) {
	var j v1alpha1.Job
	if err := json.Unmarshal(o.GetJson(), &j); err != nil {
		return nil, fmt.Errorf("the hub sent a job this CLI cannot read (version skew?): %w", err)
	}
	return &j, nil
}

// readInput opens FILE, or stdin for "-".
func readInput(cmd *cobra.Command, file string) (io.Reader, func(), error) {
	if file == "-" {
		return cmd.InOrStdin(), func() {}, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", file, err)
	}
	return f, func() { _ = f.Close() }, nil
}

func newJobSubmitCommand() *cobra.Command {
	var file, output string
	var dryRun, wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "submit -f FILE|-",
		Short: "Submit the jobs of a YAML or JSON file (several with ---); resubmitting the same job changes nothing",
		Example: "  shoal job submit -f examples/job.yaml\n" +
			"  shoal job submit -f job.yaml --dry-run   # validate only\n" +
			"  cat job.yaml | shoal job submit -f -\n" +
			"  shoal job submit -f job.yaml --wait --timeout 10m   # until every member runs",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			jobs, err := readJobs(cmd, file)
			if err != nil {
				return err
			}
			cl, done, err := jobsClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			if wait && dryRun {
				return fmt.Errorf("--wait and --dry-run: a dry run stores nothing to wait for")
			}
			stored, err := submitJobs(cmd, cl, jobs, dryRun, output)
			if err != nil || !wait {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			return waitForJobs(ctx, cmd.ErrOrStderr(), cl, stored)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file with the job(s), - for stdin")
	_ = cmd.MarkFlagRequired("filename")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate on the hub without storing")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until every member of each job runs, showing the gang's progress "+
		"on stderr; fails when a job fails or is cancelled")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait: give up after this long (0: no limit)")
	outFlag(cmd, &output)
	return cmd
}

// readJobs decodes every document of file strictly; all must be Jobs.
func readJobs(cmd *cobra.Command, file string) ([]*v1alpha1.Job, error) {
	r, closeFn, err := readInput(cmd, file)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	objs, err := v1alpha1.DecodeAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var jobs []*v1alpha1.Job
	for i, o := range objs {
		j, ok := o.(*v1alpha1.Job)
		if !ok {
			return nil, fmt.Errorf("%s: document %d is a %T, not a Job (queues: shoal queue create -f)", file, i+1, o)
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s holds no job", file)
	}
	return jobs, nil
}

// submitJobs submits the jobs (one with Submit, several with submitBatches),
// prints each job's result and returns the stored jobs with their
// revisions; a refused job is an error after every result is printed.
func submitJobs(cmd *cobra.Command, cl shoalv1.JobsClient, jobs []*v1alpha1.Job, dryRun bool, output string) ([]storedJob, error) {
	var results []submitted
	var err error
	if len(jobs) == 1 {
		results, err = submitOne(cmd, cl, jobs[0], dryRun)
	} else {
		results, err = submitBatches(cmd, cl, jobs, dryRun)
	}
	if err != nil {
		return nil, err
	}
	var out []*v1alpha1.Job
	var stored []storedJob
	refused := 0
	for _, r := range results {
		if r.err != nil {
			refused++
			if output == "table" || output == "wide" || len(results) > 1 {
				fmt.Fprintf(cmd.ErrOrStderr(), "job/%s refused: %v\n", r.name, r.err)
			}
			continue
		}
		out = append(out, r.job)
		stored = append(stored, storedJob{job: r.job, revision: r.revision})
		if output == "table" || output == "wide" {
			verb := fmt.Sprintf("submitted (%s in queue %s)", r.job.Status.Phase, r.job.Spec.Queue)
			switch {
			case dryRun:
				verb = "is valid (dry run, not stored)"
			case r.result == "existing":
				verb = fmt.Sprintf("unchanged (already submitted with the same spec; %s)", r.job.Status.Phase)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job/%s %s\n", r.job.Name, verb)
		}
	}
	if len(results) == 1 && refused == 1 {
		return nil, results[0].err
	}
	if len(out) == 1 {
		_, err = outStructured(cmd.OutOrStdout(), output, out[0])
	} else if len(out) > 1 {
		_, err = outStructured(cmd.OutOrStdout(), output, outList(out))
	}
	if err == nil && refused > 0 {
		err = fmt.Errorf("%d of %d jobs refused (listed above); the others were submitted", refused, len(results))
	}
	return stored, err
}
