// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// kwokConfig is the KWOK configuration of a workload cluster: how many pod
// stages kwok plays at once (kwokParallelism), and a ClusterLogs object
// (every container of every pod in the cluster "logs" the lines of one
// file, served by kwok's kubelet endpoint). kwok defaults no option of a
// configuration it is given, so the others are kwok v0.8's defaults
// (pkg/apis/config/v1alpha1, SetObjectDefaults_KwokConfiguration); the
// flags (kwokArgs) override them.
const kwokConfig = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  cidr: 10.0.0.0/24
  manageAllNodes: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: true
  podPlayStageParallelism: %d
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: fleet-simulated-logs
spec:
  logs:
  - logsFile: %q
    follow: false
`

// kwokParallelism is how many pod stages kwok plays at once in a cluster
// of nodes fake nodes: one per node, as each node of a real cluster has its
// own kubelet writing its pods' statuses (kwok's default, 4 for the whole
// cluster, held a 256-member gang's pods 2–3 s between bound and Running on
// 16 nodes), within [4, 64].
func kwokParallelism(nodes int) int { return min(max(nodes, 4), 64) }

// writeKwokConfig writes the cluster's simulated container log and its
// KWOK configuration (kwokConfig) for nodes fake nodes, and returns the
// configuration's path.
func writeKwokConfig(c *Cluster, nodes int) (string, error) {
	logFile := filepath.Join(c.Dir, "kwok-container.log")
	// CRI log format, as a kubelet keeps container logs: time stream tag message.
	line := fmt.Sprintf("%s stdout F simulated container log from KWOK in workload cluster %s (%s): "+
		"the pod is Running here, no container runs\n", time.Now().UTC().Format(time.RFC3339Nano), c.Name, c.Profile)
	if err := os.WriteFile(logFile, []byte(line), 0o644); err != nil {
		return "", err
	}
	cfg := filepath.Join(c.Dir, "kwok.yaml")
	return cfg, os.WriteFile(cfg, fmt.Appendf(nil, kwokConfig, kwokParallelism(nodes), logFile), 0o644)
}
