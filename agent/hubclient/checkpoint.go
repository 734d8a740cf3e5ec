// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"time"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// ReportJobCheckpoint passes on a checkpoint that member 0 of job, placed
// on this agent's cluster, printed (agent/checkpoints). The hub answers
// FailedPrecondition for a step older than the latest it holds,
// InvalidArgument for an invalid report, NotFound for an unknown job and
// PermissionDenied for a job with no member on this cluster; reporting
// the latest again is a no-op. A zero r.Time leaves the time to the hub.
func (c *Client) ReportJobCheckpoint(ctx context.Context, job string, r v1alpha1.CheckpointReport) error {
	req := &shoalv1alpha1.ReportCheckpointRequest{Name: job, Step: r.Step, Uri: r.URI}
	if !r.Time.IsZero() {
		req.Time = r.Time.UTC().Format(time.RFC3339Nano)
	}
	_, err := c.api().ReportJobCheckpoint(ctx, req)
	return err
}
