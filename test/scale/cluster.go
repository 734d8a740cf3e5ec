// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/internal/devfleet"
)

// SimCluster is one simulated cluster: the in-memory workload cluster, its
// simulated kubelet, and the real agent.
type SimCluster struct {
	Workload *Workload
	Kubelet  *Kubelet
	Agent    *agent.Agent
}

// NewSimCluster builds cluster name of n nodes of profile p and an agent
// for it that registers with h by a fresh join token.
func NewSimCluster(ctx context.Context, h *Hub, name string, p *devfleet.Profile, n int, region string) (*SimCluster, error) {
	w, err := NewWorkload(name, region, p, n)
	if err != nil {
		return nil, err
	}
	token, caHash, err := h.JoinToken(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("join token for %s: %w", name, err)
	}
	a, err := agent.New(agent.Config{
		HubAddress: h.Fleet.Shoal.Address, Token: token, CAHash: caHash, Cluster: name,
		LocalClient: w.Client, Namespace: devfleet.AgentNamespace,
		Labels: map[string]string{"profile": p.Name, "region": region},
		// Each virtual node's kubelet endpoint on a port of the kernel's
		// choice; the hub API server's kubelet client certificate is
		// signed by the fleet CA.
		KubeletListen: "127.0.0.1:0", KubeletAddress: "127.0.0.1",
		KubeletClientCAFile: h.Fleet.KubeletClientCAFile(),
		Version:             "scale-harness",
	})
	if err != nil {
		return nil, err
	}
	return &SimCluster{Workload: w, Kubelet: NewKubelet(w), Agent: a}, nil
}
