// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// checkpointHub records the checkpoints agents pass on and refuses any
// step older than the latest, as the hub does.
type checkpointHub struct {
	*testHub
	got []*shoalv1alpha1.ReportCheckpointRequest
}

func (h *checkpointHub) ReportJobCheckpoint(ctx context.Context, r *shoalv1alpha1.ReportCheckpointRequest) (*shoalv1alpha1.ReportJobCheckpointResponse, error) {
	if _, err := agentCN(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.got); n > 0 && r.Step < h.got[n-1].Step {
		return nil, status.Error(codes.FailedPrecondition, "older step")
	}
	h.got = append(h.got, r)
	return &shoalv1alpha1.ReportJobCheckpointResponse{}, nil
}

func TestReportJobCheckpoint(t *testing.T) {
	var hub *checkpointHub
	h, addr := startHubServing(t, true, func(h *testHub) shoalv1alpha1.ClustersServer {
		hub = &checkpointHub{testHub: h}
		return hub
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := registered(ctx, t, h, addr)
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))
	if err := c.ReportJobCheckpoint(ctx, "train", v1alpha1.CheckpointReport{Step: 100, URI: "s3://c/100", Time: at}); err != nil {
		t.Fatal(err)
	}
	if err := c.ReportJobCheckpoint(ctx, "train", v1alpha1.CheckpointReport{Step: 200, URI: "s3://c/200"}); err != nil {
		t.Fatal(err)
	}
	err := c.ReportJobCheckpoint(ctx, "train", v1alpha1.CheckpointReport{Step: 50, URI: "s3://c/50"})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("older step: %v, want the hub's FailedPrecondition", err)
	}
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if len(hub.got) != 2 {
		t.Fatalf("hub got %v, want 2 reports", hub.got)
	}
	first, second := hub.got[0], hub.got[1]
	if first.Name != "train" || first.Step != 100 || first.Uri != "s3://c/100" || first.Time != "2026-12-02T09:00:00.123456789Z" {
		t.Errorf("first report %v", first)
	}
	if second.Step != 200 || second.Time != "" {
		t.Errorf("a report without a time sent %q, want empty (the hub's clock)", second.Time)
	}
}
