// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// beats is a Clusters client that only counts heartbeats.
type beats struct {
	shoalv1alpha1.ClustersClient
	got chan *shoalv1alpha1.HeartbeatRequest
}

func (b beats) Heartbeat(_ context.Context, in *shoalv1alpha1.HeartbeatRequest, _ ...grpc.CallOption) (*shoalv1alpha1.HeartbeatResponse, error) {
	b.got <- in
	return &shoalv1alpha1.HeartbeatResponse{}, nil
}

// TestBeatSendsTheNextHeartbeatAtOnce: with an hour between heartbeats,
// Beat has the next one leave at once, saying what the hub-cluster probe
// says now.
func TestBeatSendsTheNextHeartbeatAtOnce(t *testing.T) {
	b := beats{got: make(chan *shoalv1alpha1.HeartbeatRequest, 10)}
	c := &Client{renewNow: make(chan struct{}, 1), beatNow: make(chan struct{}, 1)}
	c.cur.Store(&hubConn{api: b})
	var reached bool
	c.OnHubCluster(func(time.Time) bool { return reached })
	go func() {
		_ = c.RunHeartbeats(t.Context(), time.Hour, func() (bool, string) { return true, "" })
	}()
	next := func() *shoalv1alpha1.HeartbeatRequest {
		select {
		case r := <-b.got:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("no heartbeat")
			return nil
		}
	}
	if r := next(); r.GetHubClusterReachable() {
		t.Fatal("the first heartbeat said the hub cluster is reached")
	}
	reached = true
	c.Beat()
	if r := next(); !r.GetHubClusterReachable() {
		t.Fatal("the heartbeat after Beat did not say the hub cluster is reached")
	}
	select {
	case <-b.got:
		t.Fatal("a third heartbeat within the hour's interval")
	case <-time.After(200 * time.Millisecond):
	}
}
