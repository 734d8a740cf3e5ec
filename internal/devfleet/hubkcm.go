// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"strings"
	"time"
)

// HubNodeMonitorGrace is how long a virtual node of the hub cluster may go
// without a lease renewal or status update before kube-controller-manager's
// node lifecycle controller turns it Ready=Unknown. It matches the agents'
// node lease duration and shoal-hub's default --cluster-grace (40 s), so a
// dead agent's virtual nodes and its cluster turn NotReady together.
const HubNodeMonitorGrace = 40 * time.Second

// hubRunsNodeLifecycle says whether c is a hub cluster whose
// kube-controller-manager runs the node lifecycle controller for the agents'
// virtual nodes, as in a real management cluster: whenever Shoal runs on it.
func hubRunsNodeLifecycle(c *Cluster, o Options) bool {
	return c.Role == RoleHub && o.Shoal != nil && !o.NoHub
}

// hubControllerManagerArgs runs the node lifecycle controller: it turns a
// virtual node whose agent stopped renewing its lease Ready=Unknown after
// HubNodeMonitorGrace and taints it node.kubernetes.io/unreachable. Alone
// (lean) it is the only controller; with full (Options.ControllerManager) it
// joins every other default one. The taint eviction controller stays off
// either way: the hub's dispatcher decides what happens to the members of a
// lost cluster (fencing, requeue), so the NoExecute unreachable taint must
// not delete hub pods behind its back.
func hubControllerManagerArgs(c *Cluster, pki string, full bool) []string {
	controllers := "--controllers=node-lifecycle-controller"
	if full {
		controllers = "--controllers=*,-taint-eviction-controller"
	}
	var args []string
	for _, a := range controllerManagerArgs(c, pki) {
		switch {
		case strings.HasPrefix(a, "--controllers="):
			a = controllers
		case !full && (strings.HasPrefix(a, "--service-account-private-key-file=") || strings.HasPrefix(a, "--root-ca-file=") ||
			strings.HasPrefix(a, "--cluster-signing-")):
			continue
		}
		args = append(args, a)
	}
	return append(args, "--node-monitor-period=2s", "--node-monitor-grace-period="+HubNodeMonitorGrace.String())
}
