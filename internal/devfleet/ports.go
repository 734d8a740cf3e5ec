// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/shoal-dev/shoal/internal/freeport"
)

// Ports are the loopback ports one cluster listens on.
type Ports struct {
	APIServer  int `json:"apiServer"`
	EtcdClient int `json:"etcdClient"`
	EtcdPeer   int `json:"etcdPeer"`
	Scheduler  int `json:"scheduler,omitempty"`
	// ControllerManager is the hub cluster's kube-controller-manager port
	// (with Options.ControllerManager or Options.Shoal); a workload
	// cluster's serves none.
	ControllerManager int `json:"controllerManager,omitempty"`
	// Shoal is shoal-hub's gRPC port on the hub cluster and shoal-agent's
	// kubelet endpoint on a workload cluster; ShoalHTTP is the hub's
	// /readyz and /metrics port or the agent's metrics port. Used only with
	// Options.Shoal.
	Shoal     int `json:"shoal,omitempty"`
	ShoalHTTP int `json:"shoalHTTP,omitempty"`
	// ShoalREST is shoal-hub's REST listener (the REST face and the web
	// fleet view) on the hub cluster. Used only with Options.Shoal.
	ShoalREST int `json:"shoalREST,omitempty"`
	// Kwok is the kubelet endpoint kwok serves for a workload cluster's fake
	// nodes (container logs), the port in their daemonEndpoints.
	Kwok int `json:"kwok,omitempty"`
}

// DefaultBasePort is where `shoal dev` lays out its ports: cluster i (the hub
// is 0) uses base+10*i for kube-apiserver, +1 etcd client, +2 etcd peer,
// +3 kube-scheduler, +4 kube-controller-manager, +5 shoal-hub gRPC (hub) or
// the shoal-agent kubelet endpoint (workload), +6 their HTTP endpoints, +7
// kwok's kubelet endpoint (workload), +8 the shoal-hub REST listener (hub).
const DefaultBasePort = 16400

// PortInUseError says a port the fleet needs is taken by something else.
type PortInUseError struct {
	Port      int
	Cluster   string
	Component string
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("port %d (%s of cluster %s) is already in use: stop what holds it "+
		"(`ss -ltnp 'sport = :%d'`) or choose other ports with --base-port", e.Port, e.Component, e.Cluster, e.Port)
}

func layoutPorts(base, index int) Ports {
	b := base + 10*index
	return Ports{APIServer: b, EtcdClient: b + 1, EtcdPeer: b + 2, Scheduler: b + 3, ControllerManager: b + 4,
		Shoal: b + 5, ShoalHTTP: b + 6, Kwok: b + 7, ShoalREST: b + 8}
}

// freePorts picks nine distinct unused loopback ports (internal/freeport:
// out of the range the kernel gives outgoing connections, so a client's
// connection cannot take one before its server binds it).
func freePorts() (Ports, error) {
	ports := make([]int, 0, 9)
	for len(ports) < 9 {
		p, err := freeport.Pick("127.0.0.1")
		if err != nil {
			return Ports{}, err
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return Ports{APIServer: ports[0], EtcdClient: ports[1], EtcdPeer: ports[2], Scheduler: ports[3],
		ControllerManager: ports[4], Shoal: ports[5], ShoalHTTP: ports[6], Kwok: ports[7], ShoalREST: ports[8]}, nil
}

// checkPorts returns a *PortInUseError for the first port of c that is taken.
func checkPorts(c *Cluster) error {
	named := []struct {
		port int
		what string
	}{{c.Ports.APIServer, "kube-apiserver"}, {c.Ports.EtcdClient, "etcd client"},
		{c.Ports.EtcdPeer, "etcd peer"}, {c.Ports.Scheduler, "kube-scheduler"},
		{c.Ports.ControllerManager, "kube-controller-manager"}, {c.Ports.Shoal, "shoal gRPC/kubelet"},
		{c.Ports.ShoalHTTP, "shoal HTTP"}, {c.Ports.Kwok, "kwok kubelet endpoint"}, {c.Ports.ShoalREST, "shoal-hub REST"}}
	for _, n := range named {
		if n.port == 0 {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)))
		if err != nil {
			return &PortInUseError{Port: n.port, Cluster: c.Name, Component: n.what}
		}
		_ = l.Close()
	}
	return nil
}
