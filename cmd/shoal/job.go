// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// addJobCommands adds `shoal job` to root.
func addJobCommands(root *cobra.Command) {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Submit, inspect, watch and cancel gang jobs",
		Long: "A job is a gang of members placed all or none on the fleet's GPUs: identical members " +
			"(spec.gang, spec.template) or several roles (spec.roles) " +
			"(apiVersion " + v1alpha1.APIVersion + ", kind " + v1alpha1.KindJob + "; see docs/api.md and examples/).",
	}
	cmd.AddCommand(newJobSubmitCommand(), withJobCompletion(newJobGetCommand()), newJobListCommand(),
		withJobCompletion(newJobDescribeCommand()), withJobCompletion(newJobWatchCommand()),
		withJobCompletion(newJobCancelCommand()), newJobConvertCommand())
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
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "submit -f FILE|-",
		Short: "Submit the jobs of a YAML or JSON file (several with ---); resubmitting the same job changes nothing",
		Example: "  shoal job submit -f examples/job.yaml\n" +
			"  shoal job submit -f job.yaml --dry-run   # validate only\n" +
			"  cat job.yaml | shoal job submit -f -",
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
			return submitJobs(cmd, cl, jobs, dryRun, output)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file with the job(s), - for stdin")
	_ = cmd.MarkFlagRequired("filename")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate on the hub without storing")
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

func submitJobs(cmd *cobra.Command, cl shoalv1.JobsClient, jobs []*v1alpha1.Job, dryRun bool, output string) error {
	var out []*v1alpha1.Job
	for _, j := range jobs {
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		var hdr metadata.MD
		obj, err := cl.Submit(cmd.Context(), &shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: b}, DryRun: dryRun},
			grpc.Header(&hdr))
		if err != nil {
			return outCallError("submit job/"+j.Name, err)
		}
		stored, err := decodeJob(obj)
		if err != nil {
			return err
		}
		out = append(out, stored)
		if output == "table" || output == "wide" {
			verb := fmt.Sprintf("submitted (%s in queue %s)", stored.Status.Phase, stored.Spec.Queue)
			if dryRun {
				verb = "is valid (dry run, not stored)"
			} else if r := hdr.Get(v1alpha1.SubmitResultHeader); len(r) == 1 && r[0] == "existing" {
				verb = fmt.Sprintf("unchanged (already submitted with the same spec; %s)", stored.Status.Phase)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job/%s %s\n", stored.Name, verb)
		}
	}
	if len(out) == 1 {
		_, err := outStructured(cmd.OutOrStdout(), output, out[0])
		return err
	}
	_, err := outStructured(cmd.OutOrStdout(), output, outList(out))
	return err
}
