// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// ReportServiceLoad passes on the load the agent read from the ready
// replicas of an inference service in its cluster (agent/serviceload):
// the hub records it as this cluster's load of the service (the latest per
// cluster, fresh for a minute). The hub answers NotFound for an unknown
// service and PermissionDenied for one with no replica on this cluster.
func (c *Client) ReportServiceLoad(ctx context.Context, service string, value int64) error {
	_, err := c.api().ReportServiceLoad(ctx, &shoalv1alpha1.ReportServiceLoadRequest{Name: service, Value: value})
	return err
}
