// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
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
	addr    string
	cur     atomic.Pointer[hubConn]
	version string
	session string
	contact func(sent time.Time)
	// hubFence is told the hub's fence timeout from every heartbeat reply
	// that carries one.
	hubFence func(time.Duration)
	// hubCluster tells whether the hub cluster is reachable (OnHubCluster).
	hubCluster func(sent time.Time) bool
	// renewNow is signalled when a heartbeat's answer asks for a renewal
	// (the hub signs with a new CA).
	renewNow chan struct{}
	// beatNow is signalled by Beat: the next heartbeat leaves at once.
	beatNow chan struct{}
}

// hubConn is one connection to the hub, made with one agent certificate.
type hubConn struct {
	conn *grpc.ClientConn
	api  shoalv1alpha1.ClustersClient
}

// oldConnGrace is how long a connection replaced by one with a renewed
// certificate stays open for the calls in flight on it.
const oldConnGrace = 10 * time.Second

// OnContact sets f to be told the start time of every successful
// heartbeat that said the hub cluster is reachable (OnHubCluster; the
// agent's fence, agent/fence.Fence.Contact). Only those count: they alone
// move the hub's record of the agent's last contact with both the hub and
// the hub cluster (ClusterStatus.LastHubClusterContact), so the agent's
// fence never starts counting after the hub's. Call before the loops run.
func (c *Client) OnContact(f func(sent time.Time)) { c.contact = f }

// OnHubCluster sets f to be asked, as each heartbeat leaves at sent,
// whether the agent's link to the hub cluster works
// (agent/hubkube.Probe.Reachable); the heartbeat says so to the hub
// (HeartbeatRequest.hub_cluster_reachable). Unset (an agent that serves
// no hub cluster: the hub issued no hub-cluster credentials), heartbeats
// leave the field unset and each successful one is a contact. Call before
// the loops run.
func (c *Client) OnHubCluster(f func(sent time.Time) bool) { c.hubCluster = f }

// Beat has RunHeartbeats send its next heartbeat at once instead of at
// the end of its interval: what a heartbeat says changed (the hub
// cluster's probe answered for the first time, or stopped or started
// answering). It never blocks.
func (c *Client) Beat() {
	select {
	case c.beatNow <- struct{}{}:
	default:
	}
}

// OnHubFenceTimeout sets a hook told the hub's fence timeout from every
// heartbeat reply that carries one (agent/fence.Fence.Limit). Set it
// before the heartbeats start.
func (c *Client) OnHubFenceTimeout(f func(time.Duration)) { c.hubFence = f }

// contacted tells the contact hook about a call started at sent, if it
// succeeded and said the hub cluster is reachable.
func (c *Client) contacted(sent time.Time, hubCluster bool, err error) {
	if err == nil && hubCluster && c.contact != nil {
		c.contact(sent)
	}
}

// Dial returns a Client for the hub at addr, authenticated by creds.
func Dial(addr string, creds *Credentials, agentVersion string) (*Client, error) {
	hc, err := dialConn(addr, creds)
	if err != nil {
		return nil, err
	}
	c := &Client{addr: addr, version: agentVersion, session: newSessionID(), renewNow: make(chan struct{}, 1),
		beatNow: make(chan struct{}, 1)}
	c.cur.Store(hc)
	return c, nil
}

func dialConn(addr string, creds *Credentials) (*hubConn, error) {
	tlsCfg, err := creds.TLSConfig(serverName(addr))
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		return nil, fmt.Errorf("dial hub %s: %w", addr, err)
	}
	return &hubConn{conn: conn, api: shoalv1alpha1.NewClustersClient(conn)}, nil
}

// api is the Clusters client of the current connection.
func (c *Client) api() shoalv1alpha1.ClustersClient { return c.cur.Load().api }

// use switches every later call to a connection made with creds (a
// renewed certificate, a new trust bundle); the old connection closes
// once the calls in flight on it had oldConnGrace to end.
func (c *Client) use(creds *Credentials) error {
	hc, err := dialConn(c.addr, creds)
	if err != nil {
		return err
	}
	old := c.cur.Swap(hc)
	time.AfterFunc(oldConnGrace, func() { _ = old.conn.Close() })
	return nil
}

// newSessionID returns the random ID of one agent run: the hub replaces the
// inventory it holds with any report of a new session.
func newSessionID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Close closes the connection.
func (c *Client) Close() error { return c.cur.Load().conn.Close() }

// Heartbeat sends one heartbeat and returns the interval the hub asks for (0 if none).
func (c *Client) Heartbeat(ctx context.Context, reachable bool, msg string) (time.Duration, error) {
	sent := time.Now()
	req := &shoalv1alpha1.HeartbeatRequest{AgentVersion: c.version, ClusterReachable: reachable, Message: msg}
	hubCluster := true
	if c.hubCluster != nil {
		hubCluster = c.hubCluster(sent)
		req.HubClusterReachable = &hubCluster
	}
	resp, err := c.api().Heartbeat(ctx, req)
	c.contacted(sent, hubCluster, err)
	if err != nil {
		return 0, err
	}
	if s := resp.GetFenceTimeoutSeconds(); s > 0 && c.hubFence != nil {
		c.hubFence(time.Duration(s) * time.Second)
	}
	if resp.GetRenewCertificate() {
		select {
		case c.renewNow <- struct{}{}:
		default:
		}
	}
	return time.Duration(resp.GetIntervalSeconds()) * time.Second, nil
}

// ReportInventory sends one inventory report.
func (c *Client) ReportInventory(ctx context.Context, generation int64, inventoryJSON []byte) (int64, error) {
	resp, err := c.api().ReportInventory(ctx, &shoalv1alpha1.ReportInventoryRequest{
		Generation: generation, InventoryJson: inventoryJSON, SessionId: c.session})
	if err != nil {
		return 0, err
	}
	return resp.GetAcceptedGeneration(), nil
}

// ReportGitOpsStatus sends the GitOps status and returns the source to sync.
// It is the hook for the GitOps syncer (agent/gitops).
func (c *Client) ReportGitOpsStatus(ctx context.Context, statusJSON []byte) ([]byte, error) {
	resp, err := c.api().ReportGitOpsStatus(ctx, &shoalv1alpha1.ReportGitOpsStatusRequest{StatusJson: statusJSON})
	if err != nil {
		return nil, err
	}
	return resp.GetSourceJson(), nil
}

// HealthFunc tells the heartbeat whether the agent reaches its own cluster.
type HealthFunc func() (reachable bool, msg string)

// RunHeartbeats beats every interval (or what the hub asks for), and at
// once after Beat, until ctx ends; failures are retried with backoff and
// jitter.
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
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		case <-c.beatNow:
			t.Stop()
		}
	}
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}
