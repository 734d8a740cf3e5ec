// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

func newJobDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete finished jobs (Succeeded, Failed, Cancelled) with their records; cancel a job first to delete it",
		Long: "Deletes finished jobs from the hub, with the member pods kept for their logs and every record of " +
			"them. A job that has not finished is refused: `shoal job cancel` it first. The hub also deletes " +
			"finished jobs on its own after their spec.ttlSecondsAfterFinished or its --finished-job-ttl " +
			"(docs/retention.md).",
		Example: "  shoal job cancel llama-pretrain && shoal job delete llama-pretrain",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, done, err := jobsClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			for _, name := range args {
				if _, err := cl.Delete(cmd.Context(), &shoalv1.DeleteJobRequest{Name: name}); err != nil {
					return outCallError("delete job/"+name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "job/%s deleted\n", name)
			}
			return nil
		},
	}
}
