// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"k8s.io/klog/v2"

	shoalv1alpha1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
)

// Client calls the hub's agent RPCs with the agent's client certificate. The
// underlying gRPC connection reconnects by itself; failed calls are retried
// by the loops below with backoff and jitter.
type Client struct {
	conn    *grpc.ClientConn
	api     shoalv1alpha1.ClustersClient
	version string
	session string
	contact func(sent time.Time)
}

// OnContact sets f to be told the start time of every successful
// heartbeat (the agent's fence, agent/fence.Fence.Contact). Only heartbeats
// count: they alone move the hub's record of the cluster's last contact, so
// the agent's fence never starts counting after the hub's. Call before the
// loops run.
func (c *Client) OnContact(f func(sent time.Time)) { c.contact = f }

// contacted tells the contact hook about a call started at sent, if it
// succeeded.
func (c *Client) contacted(sent time.Time, err error) {
	if err == nil && c.contact != nil {
		c.contact(sent)
	}
}

// Dial returns a Client for the hub at addr, authenticated by creds.
func Dial(addr string, creds *Credentials, agentVersion string) (*Client, error) {
	tlsCfg, err := creds.TLSConfig(serverName(addr))
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		return nil, fmt.Errorf("dial hub %s: %w", addr, err)
	}
	return &Client{conn: conn, api: shoalv1alpha1.NewClustersClient(conn), version: agentVersion, session: newSessionID()}, nil
}

// newSessionID returns the random ID of one agent run: the hub replaces the
// inventory it holds with any report of a new session.
func newSessionID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Heartbeat sends one heartbeat and returns the interval the hub asks for (0 if none).
func (c *Client) Heartbeat(ctx context.Context, reachable bool, msg string) (time.Duration, error) {
	sent := time.Now()
	resp, err := c.api.Heartbeat(ctx, &shoalv1alpha1.HeartbeatRequest{AgentVersion: c.version, ClusterReachable: reachable, Message: msg})
	c.contacted(sent, err)
	if err != nil {
		return 0, err
	}
	return time.Duration(resp.GetIntervalSeconds()) * time.Second, nil
}

// ReportInventory sends one inventory report.
func (c *Client) ReportInventory(ctx context.Context, generation int64, inventoryJSON []byte) (int64, error) {
	resp, err := c.api.ReportInventory(ctx, &shoalv1alpha1.ReportInventoryRequest{
		Generation: generation, InventoryJson: inventoryJSON, SessionId: c.session})
	if err != nil {
		return 0, err
	}
	return resp.GetAcceptedGeneration(), nil
}

// ReportGitOpsStatus sends the GitOps status and returns the source to sync.
// It is the hook for the GitOps syncer (agent/gitops).
func (c *Client) ReportGitOpsStatus(ctx context.Context, statusJSON []byte) ([]byte, error) {
	resp, err := c.api.ReportGitOpsStatus(ctx, &shoalv1alpha1.ReportGitOpsStatusRequest{StatusJson: statusJSON})
	if err != nil {
		return nil, err
	}
	return resp.GetSourceJson(), nil
}

// HealthFunc tells the heartbeat whether the agent reaches its own cluster.
type HealthFunc func() (reachable bool, msg string)

// RunHeartbeats beats every interval (or what the hub asks for) until ctx
// ends; failures are retried with backoff and jitter.
func (c *Client) RunHeartbeats(ctx context.Context, interval time.Duration, health HealthFunc) error {
	log := klog.FromContext(ctx).WithName("heartbeat")
	bo := Backoff{Initial: 500 * time.Millisecond, Max: 30 * time.Second}
	failing := false
	for {
		reachable, msg := health()
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		next, err := c.Heartbeat(callCtx, reachable, msg)
		cancel()
		wait := interval
		switch {
		case err != nil:
			if !failing {
				log.Error(err, "Heartbeat failed; retrying with backoff")
			}
			failing = true
			wait = bo.Next()
		default:
			if failing {
				log.Info("Heartbeat recovered")
			}
			failing = false
			bo.Reset()
			if next > 0 {
				wait = next
			}
		}
		metricHeartbeats.WithLabelValues(result(err)).Inc()
		if !sleep(ctx, wait) {
			return nil
		}
	}
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}
