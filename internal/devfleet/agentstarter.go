// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"fmt"
	"os"
)

// AgentJoin is what an agent of a workload cluster needs to register with
// the fleet's hub: what the fleet passes a host shoal-agent as flags.
type AgentJoin struct {
	// Hub is the hub's gRPC address (host:port) on the host's loopback.
	Hub string
	// Token and CAHash are the one-use join token and the hub CA's hash.
	Token, CAHash string
	// Namespace is the agent's namespace in its cluster (AgentNamespace),
	// created by the fleet.
	Namespace string
	// KubeletAddress is where the hub API server reaches the agent's
	// kubelet endpoints (the cluster's first real node's address, or loopback).
	KubeletAddress string
	// KubeletClientCA is the PEM CA certificate that signed the hub API
	// server's kubelet client certificate.
	KubeletClientCA []byte
	// Labels are the cluster labels (profile, region).
	Labels map[string]string
}

// AgentStarter starts a workload cluster's agent some other way than as a
// host process, e.g. as the shoal-agent chart's Deployment on the cluster's
// real node (test/e2e/agentpod). It returns once the agent is started; Up
// then waits for the cluster to register as for every other.
type AgentStarter func(ctx context.Context, c *Cluster, j AgentJoin) error

// agentStarter is c's AgentStarter, or nil when the fleet runs its agent as a host process.
func (f *Fleet) agentStarter(c *Cluster) AgentStarter {
	if f.opts.Shoal == nil || c.Role != RoleWorkload {
		return nil
	}
	return f.opts.Shoal.AgentStarters[c.Name]
}

// startExternalAgent hands c's join to start.
func (f *Fleet) startExternalAgent(ctx context.Context, c *Cluster, start AgentStarter, token, caHash string) error {
	ca, err := os.ReadFile(f.KubeletClientCAFile())
	if err != nil {
		return fmt.Errorf("cluster %s: kubelet client CA: %w", c.Name, err)
	}
	j := AgentJoin{Hub: f.Shoal.Address, Token: token, CAHash: caHash, Namespace: AgentNamespace,
		KubeletAddress: agentIP(c), KubeletClientCA: ca,
		Labels: map[string]string{"profile": c.Profile, "region": c.Region}}
	if err := start(ctx, c, j); err != nil {
		return fmt.Errorf("cluster %s: start its agent: %w", c.Name, err)
	}
	f.progress("cluster %s: agent started by the fleet's caller with a one-use join token", c.Name)
	f.stepTo("agent/"+c.Name, 1, "cluster "+c.Name+": shoal-agent started")
	return nil
}
