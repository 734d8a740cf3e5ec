// SPDX-License-Identifier: Apache-2.0

// Package shared runs Shoal end to end on shared GPUs: a workload cluster
// of l4-shared KWOK nodes (4 L4s time-sliced 4 ways, 16
// nvidia.com/gpu.shared each, as the NVIDIA device plugin publishes them
// with renameByDefault) beside one of hgx-h100 nodes (whole GPUs). The
// shipped shoal-hub and shoal-agent run them; the tests' jobs go in through
// the hub's gRPC API.
package shared

import (
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// nodes is each workload cluster's node count.
const nodes = 3

// The profiles of the fleet's two workload clusters.
const (
	profileShared = "l4-shared"
	profileWhole  = "hgx-h100"
)

// sharesPerNode is the nvidia.com/gpu.shared of an l4-shared node.
const sharesPerNode = 16

var (
	fl *framework.Fleet
	// sharedName and wholeName are the l4-shared and hgx-h100 clusters;
	// sharedCS reaches the first as admin.
	sharedName, wholeName string
	sharedCS              kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithShoalFleet(m, devfleet.Options{Profiles: []string{profileShared, profileWhole}, Clusters: 2, Nodes: nodes},
		nil, setFleet))
}

// setFleet finds the two workload clusters of f.
func setFleet(f *framework.Fleet, _ string) error {
	fl = f
	for _, w := range f.Workloads() {
		switch w.Profile {
		case profileShared:
			sharedName = w.Name
			var err error
			if sharedCS, err = w.Clientset(); err != nil {
				return err
			}
		case profileWhole:
			wholeName = w.Name
		}
	}
	return nil
}
