// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// hubAPI is the little of the hub's Clusters service that Up needs, dialled
// with the admin identity shoal-hub wrote into the fleet's CLI config (the
// same config and TLS helpers the shoal CLI uses).
type hubAPI struct {
	conn *grpc.ClientConn
	cl   shoalv1.ClustersClient
}

func dialHubAPI(configPath string) (*hubAPI, error) {
	cfg, err := configv1alpha1.Load(configPath)
	if err != nil {
		return nil, fmt.Errorf("shoal config written by shoal-hub: %w", err)
	}
	hctx, err := cfg.Context(ShoalContext)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", configPath, err)
	}
	tlsCfg, err := hctx.ClientTLSConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", configPath, err)
	}
	conn, err := grpc.NewClient(hctx.Hub, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		return nil, fmt.Errorf("hub address %q: %w", hctx.Hub, err)
	}
	return &hubAPI{conn: conn, cl: shoalv1.NewClustersClient(conn)}, nil
}

func (h *hubAPI) close() { _ = h.conn.Close() }

// joinToken creates a one-use, one-hour join token for cluster.
func (h *hubAPI) joinToken(ctx context.Context, cluster string) (token, caHash string, err error) {
	resp, err := h.cl.CreateJoinToken(ctx, &shoalv1.CreateJoinTokenRequest{
		TtlSeconds: 3600, Usages: 1, Description: "shoal dev up: " + cluster,
	})
	if err != nil {
		return "", "", err
	}
	return resp.Token, resp.CaHash, nil
}

// clusterStates maps each registered cluster to its state (Ready, NotReady…).
func (h *hubAPI) clusterStates(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	opts := &shoalv1.ListOptions{Limit: 500}
	for {
		resp, err := h.cl.ListClusters(ctx, &shoalv1.ListClustersRequest{Options: opts})
		if err != nil {
			return nil, err
		}
		for _, o := range resp.Items {
			var c v1alpha1.Cluster
			if err := json.Unmarshal(o.GetJson(), &c); err != nil {
				return nil, err
			}
			out[c.Name] = string(c.Status.State)
		}
		if resp.GetMeta().GetContinue() == "" {
			return out, nil
		}
		opts.Continue = resp.Meta.Continue
	}
}

// ClusterStates asks the fleet's running hub for every registered cluster's
// state, with the admin identity of the fleet's CLI config.
func (f *Fleet) ClusterStates(ctx context.Context) (map[string]string, error) {
	if f.Shoal == nil {
		return nil, fmt.Errorf("the fleet in %s runs no shoal-hub", f.Dir)
	}
	api, err := dialHubAPI(f.Shoal.Config)
	if err != nil {
		return nil, err
	}
	defer api.close()
	return api.clusterStates(ctx)
}
