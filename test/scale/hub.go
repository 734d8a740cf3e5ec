// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"k8s.io/client-go/kubernetes"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// Hub is a running shoal-hub with its hub cluster, started as `shoal dev
// up` starts them, and the admin's gRPC clients of it.
type Hub struct {
	Fleet *devfleet.Fleet
	// Kube is an admin client of the hub cluster.
	Kube     kubernetes.Interface
	Jobs     shoalv1.JobsClient
	Queues   shoalv1.QueuesClient
	Clusters shoalv1.ClustersClient
	conn     *grpc.ClientConn
}

// StartHub starts the hub cluster (etcd, kube-apiserver,
// kube-controller-manager) and shoal-hub from hubBinary in dir (with
// hubArgs, and hubEnv added to its environment), with no workload cluster,
// and dials the hub as the admin.
func StartHub(ctx context.Context, dir, hubBinary string, hubArgs, hubEnv []string) (*Hub, error) {
	opts := devfleet.Options{Dir: dir, NoWorkloads: true, DieWithParent: true,
		// No shoal-agent process is started (no workload cluster), but the
		// options want an executable: the harness runs the agents in process.
		Shoal: &devfleet.ShoalOptions{HubBinary: hubBinary, AgentBinary: hubBinary, HubArgs: hubArgs, HubEnv: hubEnv}}
	var f *devfleet.Fleet
	var err error
	for range 3 { // ports are picked before they are bound: another fleet may take one first
		f, err = devfleet.Up(ctx, opts)
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	h := &Hub{Fleet: f}
	if h.Kube, err = f.Hub().Clientset(); err != nil {
		_ = f.Stop()
		return nil, err
	}
	if h.conn, err = dial(f.Shoal.Config); err != nil {
		_ = f.Stop()
		return nil, err
	}
	h.Jobs, h.Queues, h.Clusters = shoalv1.NewJobsClient(h.conn), shoalv1.NewQueuesClient(h.conn), shoalv1.NewClustersClient(h.conn)
	return h, nil
}

// Pid is the shoal-hub process id.
func (h *Hub) Pid() int {
	for _, p := range h.Fleet.Processes() {
		if p.Name == devfleet.HubProcess {
			return p.Pid
		}
	}
	return 0
}

// NewJobsClient dials the hub again as the admin: a connection of its
// own, as another client process has one (the job watch and each
// submitter use their own, so that no call waits behind another's
// stream on a shared connection). close closes it.
func (h *Hub) NewJobsClient() (jobs shoalv1.JobsClient, close func() error, err error) {
	conn, err := dial(h.Fleet.Shoal.Config)
	if err != nil {
		return nil, nil, err
	}
	return shoalv1.NewJobsClient(conn), conn.Close, nil
}

// Stop closes the connection and stops the hub's processes.
func (h *Hub) Stop() error {
	_ = h.conn.Close()
	return h.Fleet.Stop()
}

// JoinToken creates a one-use join token for cluster.
func (h *Hub) JoinToken(ctx context.Context, cluster string) (token, caHash string, err error) {
	resp, err := h.Clusters.CreateJoinToken(ctx, &shoalv1.CreateJoinTokenRequest{TtlSeconds: 3600, Usages: 1,
		Description: "scale harness: " + cluster})
	if err != nil {
		return "", "", err
	}
	return resp.Token, resp.CaHash, nil
}

// dial connects with the admin identity of the CLI config shoal-hub wrote.
func dial(configPath string) (*grpc.ClientConn, error) {
	cfg, err := configv1alpha1.Load(configPath)
	if err != nil {
		return nil, err
	}
	hctx, err := cfg.Context(devfleet.ShoalContext)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := hctx.ClientTLSConfig()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(hctx.Hub, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, fmt.Errorf("hub address %q: %w", hctx.Hub, err)
	}
	return conn, nil
}
