// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// completionLimit bounds the names a completion fetches from the hub.
const completionLimit = 200

// completeJobNames completes job names with the given prefix (any number of
// arguments), from the first page of the hub's list.
func completeJobNames(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	cl, done, err := jobsClient(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer done()
	resp, err := cl.List(cmd.Context(), &shoalv1.ListJobsRequest{Options: &shoalv1.ListOptions{Limit: completionLimit}})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, o := range resp.Items {
		if j, err := decodeJob(o); err == nil && strings.HasPrefix(j.Name, prefix) {
			names = append(names, j.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeQueueNames completes queue names with the given prefix.
func completeQueueNames(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	cl, done, err := queuesClient(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer done()
	resp, err := cl.List(cmd.Context(), &shoalv1.ListQueuesRequest{Options: &shoalv1.ListOptions{Limit: completionLimit}})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, o := range resp.Items {
		if q, err := decodeQueueObject(o); err == nil && strings.HasPrefix(q.Name, prefix) {
			names = append(names, q.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// withJobCompletion sets the job-name completion on cmd and returns it.
func withJobCompletion(cmd *cobra.Command) *cobra.Command {
	cmd.ValidArgsFunction = completeJobNames
	return cmd
}

// withQueueCompletion sets the queue-name completion on cmd and returns it.
func withQueueCompletion(cmd *cobra.Command) *cobra.Command {
	cmd.ValidArgsFunction = completeQueueNames
	return cmd
}
