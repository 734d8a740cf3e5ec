// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shoal-dev/shoal/agent/fence"
	"github.com/shoal-dev/shoal/agent/hubclient"
	"github.com/shoal-dev/shoal/agent/nodehealth"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// GitOpsFunc is the hook for the GitOps syncer (agent/gitops): it runs for
// the agent's lifetime with the hub client and the local cluster.
type GitOpsFunc func(ctx context.Context, hub *hubclient.Client, local kubernetes.Interface, localCfg *rest.Config) error

// Config is everything the agent needs.
type Config struct {
	// HubAddress is the hub API's host:port.
	HubAddress string
	// Token and CAHash are needed only for the first registration.
	Token, CAHash string
	// Cluster is the cluster's federation name.
	Cluster string
	// Local reaches the workload cluster.
	Local *rest.Config
	// LocalClient, when set, is the workload cluster's client in place of
	// one built from Local, which may then be nil. It is the one seam for
	// an in-memory workload cluster (the hub load harness of test/scale
	// passes client-go's fake clientset); everything else the agent does
	// is unchanged. Exec, attach and port-forward stream through Local and
	// are refused without it, and GitOps needs Local.
	LocalClient kubernetes.Interface
	// Namespace holds the credentials Secret (default shoal-system).
	Namespace string
	// Topology picks the node labels read as NVLink domain, rack, block and
	// zone: a preset, a map, or (zero) auto-detection of a preset.
	Topology fedinv.TopologyChoice
	// Labels are the cluster's labels.
	Labels map[string]string
	// HeartbeatInterval between heartbeats (default 10 s; the hub may ask for another).
	HeartbeatInterval time.Duration
	// KubeletListen is the listen address of the first virtual node's kubelet
	// endpoint (default ":10250"); each further node takes the next port (a
	// port of the kernel's choice each when the port is 0).
	KubeletListen string
	// KubeletAddress is the IP the hub's API server dials for the kubelet API (logs, exec, attach, port-forward, /pods, stats).
	KubeletAddress string
	// KubeletClientCAFile is a PEM file of the CA certificates that sign the
	// client certificate of the hub API server (its
	// --kubelet-client-certificate; in kubeadm clusters the cluster CA).
	// The kubelet endpoints refuse any client without a certificate it
	// signed at the TLS handshake, and ask the hub API server by
	// SubjectAccessReview whether the certificate's user may do each
	// request (nodes/proxy, nodes/stats, nodes/pods as a kubelet does).
	KubeletClientCAFile string
	// KubeletInsecureAllowAnyClient serves any client on the kubelet
	// endpoints, without authentication or authorization. One of it and
	// KubeletClientCAFile must be set, not both.
	KubeletInsecureAllowAnyClient bool
	// LeaseDurationSeconds of the virtual nodes' leases (default 40).
	LeaseDurationSeconds int32
	// InventoryInterval is the least time between inventory builds (default 200 ms).
	InventoryInterval time.Duration
	// Version is the agent version.
	Version string
	// GitOps, when set, runs beside the other parts.
	GitOps GitOpsFunc
	// NodeFailureGrace is how long a member's node must be NotReady, short
	// of GPUs bound on it, or carry a GPU failure taint or condition before
	// the agent stops the member and reports it Failed (default 10 s).
	NodeFailureGrace time.Duration
	// GPUFailureTaints are node taint keys that mean the node's GPUs failed.
	GPUFailureTaints []string
	// GPUFailureConditions are node condition types that, True, mean the
	// node's GPUs failed.
	GPUFailureConditions []string
	// SpotNodeTaints are taint keys, and SpotNodeLabels labels ("key" or
	// "key=value"), that mark a spot or preemptible node to go: its
	// members' gangs are moved with their preemption grace, not counted as
	// restarts, and the node is reported unschedulable (agent/nodehealth).
	SpotNodeTaints, SpotNodeLabels []string
	// FenceTimeout is how long the agent may go without a successful call
	// to the hub before it stops every member itself and refuses new ones
	// until it reaches the hub again (default fence.DefaultTimeout). It must
	// not exceed the hub's --cluster-fence-timeout.
	FenceTimeout time.Duration
	// HubClusterDial, when set, dials the hub cluster's API server in place
	// of a plain TCP dial (rest.Config.Dial), for tests that cut the agent
	// off through a proxy.
	HubClusterDial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (c *Config) defaults() error {
	if c.Cluster == "" || c.HubAddress == "" || c.Local == nil && c.LocalClient == nil {
		return errors.New("agent: cluster name, hub address and workload cluster config are required")
	}
	if c.GitOps != nil && c.Local == nil {
		return errors.New("agent: GitOps needs the workload cluster config (Local), not only a client")
	}
	if c.Namespace == "" {
		c.Namespace = "shoal-system"
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 10 * time.Second
	}
	if c.KubeletListen == "" {
		c.KubeletListen = ":10250"
	}
	switch {
	case c.KubeletClientCAFile == "" && !c.KubeletInsecureAllowAnyClient:
		return errors.New("agent: the kubelet endpoints need a client CA (--kubelet-client-ca: the CA of the hub API server's " +
			"--kubelet-client-certificate) or, to serve any client, --kubelet-insecure-allow-any-client")
	case c.KubeletClientCAFile != "" && c.KubeletInsecureAllowAnyClient:
		return errors.New("agent: --kubelet-client-ca and --kubelet-insecure-allow-any-client exclude each other")
	}
	if c.KubeletAddress == "" {
		c.KubeletAddress = "127.0.0.1"
	}
	if err := c.Topology.Validate(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if c.NodeFailureGrace < 0 {
		return errors.New("agent: the node failure grace must not be negative")
	}
	if c.NodeFailureGrace == 0 {
		c.NodeFailureGrace = nodehealth.DefaultGrace
	}
	if c.FenceTimeout < 0 {
		return errors.New("agent: the fence timeout must not be negative")
	}
	if c.FenceTimeout == 0 {
		c.FenceTimeout = fence.DefaultTimeout
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return nil
}
