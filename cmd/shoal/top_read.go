// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// topAPI are the hub calls `shoal top` makes: lists only.
type topAPI struct {
	clusters shoalv1.ClustersClient
	queues   shoalv1.QueuesClient
	jobs     shoalv1.JobsClient
}

// topSnapshot is one reading of the fleet.
type topSnapshot struct {
	clusters []*v1alpha1.Cluster
	queues   []*v1alpha1.Queue
	jobs     []*v1alpha1.Job
}

// read lists every cluster, queue and job (all pages).
func (a topAPI) read(ctx context.Context) (*topSnapshot, error) {
	s := &topSnapshot{}
	var err error
	if s.clusters, err = listAllClusters(ctx, a.clusters, ""); err != nil {
		return nil, outCallError("list clusters", err)
	}
	opts := &shoalv1.ListOptions{Limit: 500}
	for {
		resp, err := a.queues.List(ctx, &shoalv1.ListQueuesRequest{Options: opts})
		if err != nil {
			return nil, outCallError("list queues", err)
		}
		for _, o := range resp.Items {
			q, err := decodeQueueObject(o)
			if err != nil {
				return nil, err
			}
			s.queues = append(s.queues, q)
		}
		if opts.Continue = resp.GetMeta().GetContinue(); opts.Continue == "" {
			break
		}
	}
	req := &shoalv1.ListJobsRequest{Options: &shoalv1.ListOptions{Limit: 500}}
	for {
		resp, err := a.jobs.List(ctx, req)
		if err != nil {
			return nil, outCallError("list jobs", err)
		}
		for _, o := range resp.Items {
			j, err := decodeJob(o)
			if err != nil {
				return nil, err
			}
			s.jobs = append(s.jobs, j)
		}
		if req.Options.Continue = resp.GetMeta().GetContinue(); req.Options.Continue == "" {
			return s, nil
		}
	}
}
