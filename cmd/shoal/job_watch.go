// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

func newJobWatchCommand() *cobra.Command {
	var output string
	var rev int64
	cmd := &cobra.Command{
		Use:   "watch [NAME]",
		Short: "Stream changes to jobs (one job when NAME is given) until interrupted",
		Long: "Prints one line per change: event, revision, name, phase, clusters. When it ends it " +
			"prints, on standard error, the --revision that resumes it missing nothing: the last revision " +
			"printed, or the one before it when the watch ended among the jobs of one transaction (a batch " +
			"submission's jobs, a booking's, share a revision; the lines of that revision already printed " +
			"then come again). Structured output (-o json|yaml) carries \"more\": true on such events.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			cl, done, err := jobsClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			req := &shoalv1.WatchJobsRequest{Revision: rev}
			if len(args) == 1 {
				req.Name = args[0]
			}
			stream, err := cl.Watch(ctx, req)
			if err != nil {
				return outCallError("watch jobs", err)
			}
			resume, err := printJobEvents(cmd.OutOrStdout(), stream, output)
			if resume > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "resume with --revision %d\n", resume)
			}
			if ctx.Err() != nil || pastDeadline(ctx) {
				return nil // interrupted or past the caller's deadline: the normal end of a watch
			}
			return err
		},
	}
	cmd.Flags().Int64Var(&rev, "revision", 0, "deliver the changes after this revision (0: from now)")
	outFlag(cmd, &output)
	return cmd
}

// pastDeadline reports whether ctx's deadline has passed: the stream can
// notice it a moment before ctx does.
func pastDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// printJobEvents prints events until the stream ends and returns the
// revision a watch resumes from to miss none after them (0: none came).
func printJobEvents(w io.Writer, stream shoalv1.Jobs_WatchClient, output string) (resume int64, err error) {
	tw := outTable(w)
	if output == "table" || output == "wide" {
		fmt.Fprintln(tw, "EVENT\tREVISION\tNAME\tQUEUE\tPHASE\tCLUSTERS")
		_ = tw.Flush()
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return resume, nil
		}
		if err != nil {
			return resume, outCallError("watch jobs", err)
		}
		j, err := decodeJob(ev.Object)
		if err != nil {
			return resume, err
		}
		resume = ev.Object.Revision
		line := map[string]any{"type": ev.Type.String(), "object": j}
		if ev.More {
			resume-- // the rest of this revision's jobs are still to come
			line["more"] = true
		}
		if ok, err := outStructured(w, output, line); ok {
			if err != nil {
				return resume, err
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", ev.Type, ev.Object.Revision, j.Name, j.Spec.Queue,
			outDash(string(j.Status.Phase)), outDash(strings.Join(j.Status.Clusters(), ",")))
		_ = tw.Flush()
	}
}

func newJobCancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel NAME...",
		Short: "Cancel jobs; finished jobs stay as they are",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, done, err := jobsClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			for _, name := range args {
				obj, err := cl.Cancel(cmd.Context(), &shoalv1.CancelJobRequest{Name: name})
				if err != nil {
					return outCallError("cancel job/"+name, err)
				}
				j, err := decodeJob(obj)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "job/%s %s\n", name, j.Status.Phase)
			}
			return nil
		},
	}
}
