// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"path/filepath"

	"github.com/shoal-dev/shoal/internal/freeport"
)

// RealNode is one node of a workload cluster run by a real kubelet on its
// own containerd, as recorded in the state file. Its pods get IPs from its
// own subnet on its own Linux bridge, whose gateway address is also the
// node's InternalIP; the host routes between the bridges, so pods of every
// real node of the fleet reach each other (a flat pod network).
type RealNode struct {
	// Name is the Node name, <cluster>-n<index> like the KWOK nodes it replaces.
	Name string `json:"name"`
	// Dir holds its containerd root and state, kubelet root dir, CNI config and certificates.
	Dir string `json:"dir"`
	// SocketDir holds its containerd sockets and device-plugin directory, on
	// a short path: a Unix socket path has at most 107 bytes.
	SocketDir string `json:"socketDir"`
	// Bridge is its Linux bridge; Subnet its pod CIDR; IP the bridge's
	// address, the node's InternalIP and its pods' gateway.
	Bridge string `json:"bridge"`
	Subnet string `json:"subnet"`
	IP     string `json:"ip"`
	// KubeletPort and HealthzPort are the kubelet's endpoint (on IP) and its /healthz (on loopback).
	KubeletPort int `json:"kubeletPort"`
	HealthzPort int `json:"healthzPort"`
	// CgroupRoot is the kubelet's --cgroup-root, one per node.
	CgroupRoot string `json:"cgroupRoot"`
}

// Socket is the node's containerd socket.
func (n *RealNode) Socket() string { return filepath.Join(n.SocketDir, "containerd.sock") }

// stateDir is the node's containerd state directory (network namespaces
// are mounted under it, so teardown finds them).
func (n *RealNode) stateDir() string { return filepath.Join(n.Dir, "containerd", "state") }

// KubeletRoot is the kubelet's --root-dir.
func (n *RealNode) KubeletRoot() string { return filepath.Join(n.Dir, "kubelet") }

// PodLogsDir is where the node's kubelet writes its containers' logs. Each
// real node has its own: a kubelet's container garbage collector removes
// every pod log directory under its root that belongs to a pod it does not
// know, so two kubelets on one machine sharing the default /var/log/pods
// delete each other's logs (TestWrongWorldSizeFailsTheGang read "no such
// file or directory" for its members' logs while another fleet ran).
func (n *RealNode) PodLogsDir() string { return filepath.Join(n.Dir, "pod-logs") }

// DevicePluginDir is where the node's kubelet expects device plugins.
func (n *RealNode) DevicePluginDir() string { return filepath.Join(n.SocketDir, "device-plugins") }

// realNodeNet lays out the pod network of node j of workload cluster i
// (both from 0) in network slot s: subnet 10.(200+s).(8i+j).0/24, bridge
// sh<s>c<i>n<j>. Slots keep fleets that run at once (tests) apart.
func realNodeNet(slot, cluster, node int) (bridge, subnet, ip string, err error) {
	if slot < 0 || slot > 49 || cluster < 0 || cluster > 31 || node < 0 || node > 7 {
		return "", "", "", fmt.Errorf("real nodes: at most 32 workload clusters of 8 real nodes and 50 fleets at once (slot %d, cluster %d, node %d)",
			slot, cluster, node)
	}
	third := 8*cluster + node
	subnet = fmt.Sprintf("10.%d.%d.0/24", 200+slot, third)
	ip = fmt.Sprintf("10.%d.%d.1", 200+slot, third)
	return fmt.Sprintf("sh%dc%dn%d", slot, cluster, node), subnet, ip, nil
}

// dnsIP is the address the cluster's CoreDNS listens on: its first real
// node's bridge address, reachable from every pod of the fleet.
func (c *Cluster) dnsIP() string {
	if len(c.RealNodes) == 0 {
		return ""
	}
	return c.RealNodes[0].IP
}

// freePort picks an unused port on ip (internal/freeport).
func freePort(ip string) (int, error) { return freeport.Pick(ip) }
