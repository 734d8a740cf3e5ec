// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// kwokLogsConfig is a KWOK ClusterLogs object: every container of every pod
// in the cluster "logs" the lines of one file, served by kwok's kubelet
// endpoint.
const kwokLogsConfig = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: fleet-simulated-logs
spec:
  logs:
  - logsFile: %q
    follow: false
`

// writeKwokLogs writes the cluster's simulated container log and the KWOK
// config that serves it, and returns the config's path.
func writeKwokLogs(c *Cluster) (string, error) {
	logFile := filepath.Join(c.Dir, "kwok-container.log")
	// CRI log format, as a kubelet keeps container logs: time stream tag message.
	line := fmt.Sprintf("%s stdout F simulated container log from KWOK in workload cluster %s (%s): "+
		"the pod is Running here, no container runs\n", time.Now().UTC().Format(time.RFC3339Nano), c.Name, c.Profile)
	if err := os.WriteFile(logFile, []byte(line), 0o644); err != nil {
		return "", err
	}
	cfg := filepath.Join(c.Dir, "kwok-logs.yaml")
	return cfg, os.WriteFile(cfg, fmt.Appendf(nil, kwokLogsConfig, logFile), 0o644)
}
