// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
)

// CheckpointRecorder records the checkpoints jobs report (hub/jobs).
type CheckpointRecorder interface {
	JobReader
	ReportCheckpoint(ctx context.Context, name string, r v1alpha1.CheckpointReport, by string) (*v1alpha1.Job, int64, error)
}

// checkpointReport reads a report from its request (time in RFC 3339).
func checkpointReport(req *shoalv1.ReportCheckpointRequest) (v1alpha1.CheckpointReport, error) {
	r := v1alpha1.CheckpointReport{Step: req.Step, URI: req.Uri}
	if req.Time != "" {
		t, err := time.Parse(time.RFC3339Nano, req.Time)
		if err != nil {
			return r, v1alpha1.NewInvalidError("Checkpoint", req.Name, field.ErrorList{
				field.Invalid(field.NewPath("time"), req.Time, "must be a time in RFC 3339, e.g. 2026-12-02T10:00:00Z")})
		}
		r.Time = t
	}
	return r, nil
}

// ReportJobCheckpoint records a checkpoint a member of a job placed on the
// calling agent's cluster printed: refused (PermissionDenied) for a job
// with no member there.
func (s *clustersServer) ReportJobCheckpoint(ctx context.Context, req *shoalv1.ReportCheckpointRequest) (*shoalv1.ReportJobCheckpointResponse, error) {
	id, err := agentIdentity(ctx)
	if err != nil {
		return nil, err
	}
	if s.checkpoints == nil {
		return nil, errorNoJobs
	}
	r, err := checkpointReport(req)
	if err != nil {
		return nil, err
	}
	j, _, err := s.checkpoints.Get(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(j.Status.Clusters(), id.Cluster) {
		return nil, errs.Of(errs.ErrPermissionDenied, "job %q has no member on cluster %s; an agent reports checkpoints only of its own cluster's jobs", req.Name, id.Cluster)
	}
	if _, _, err := s.checkpoints.ReportCheckpoint(ctx, req.Name, r, fmt.Sprintf("agent:%s", id.Cluster)); err != nil {
		return nil, err
	}
	return &shoalv1.ReportJobCheckpointResponse{}, nil
}
