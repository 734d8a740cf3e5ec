// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// loadHub records the service loads agents report and refuses a service
// it does not know, as the hub does.
type loadHub struct {
	*testHub
	got []*shoalv1alpha1.ReportServiceLoadRequest
}

func (h *loadHub) ReportServiceLoad(ctx context.Context, r *shoalv1alpha1.ReportServiceLoadRequest) (*shoalv1alpha1.ReportServiceLoadResponse, error) {
	if _, err := agentCN(ctx); err != nil {
		return nil, err
	}
	if r.Name != "chat" {
		return nil, status.Error(codes.NotFound, "no such service")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, r)
	return &shoalv1alpha1.ReportServiceLoadResponse{}, nil
}

func TestReportServiceLoad(t *testing.T) {
	var hub *loadHub
	h, addr := startHubServing(t, true, func(h *testHub) shoalv1alpha1.ClustersServer {
		hub = &loadHub{testHub: h}
		return hub
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := registered(ctx, t, h, addr)
	if err := c.ReportServiceLoad(ctx, "chat", 7); err != nil {
		t.Fatal(err)
	}
	if err := c.ReportServiceLoad(ctx, "gone", 3); status.Code(err) != codes.NotFound {
		t.Errorf("unknown service: %v, want the hub's NotFound", err)
	}
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if len(hub.got) != 1 || hub.got[0].Name != "chat" || hub.got[0].Value != 7 {
		t.Errorf("hub got %v, want chat=7", hub.got)
	}
}
