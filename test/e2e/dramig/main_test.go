// SPDX-License-Identifier: Apache-2.0

// Package dramig runs Shoal end to end on a DRA-only workload cluster whose
// GPUs are partly MIG partitions: KWOK nodes of the a100-mig-dra profile
// carry no extended GPU resource and no GFD label; the fleet's DRA driver
// simulator (internal/devfleet dra_mig.go) publishes each node's 2 whole
// A100 80GB GPUs and the static MIG partitions of 6 more (28 x 1g.10gb,
// 4 x 3g.40gb), with DeviceClasses mapping nvidia.com/gpu and
// nvidia.com/mig-<profile> to them. The shipped shoal-hub and shoal-agent
// run it; the tests' jobs go in through the hub's gRPC API.
package dramig

import (
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// nodes is the workload cluster's node count.
const nodes = 2

// profile is the workload cluster's profile.
const profile = "a100-mig-dra"

var (
	fl *framework.Fleet
	// migCS reaches the workload cluster as admin.
	migCS   kubernetes.Interface
	migName string
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithShoalFleet(m, devfleet.Options{Profiles: []string{profile}, Clusters: 1, Nodes: nodes},
		nil, setFleet))
}

// setFleet keeps f and the workload cluster.
func setFleet(f *framework.Fleet, _ string) error {
	fl = f
	for _, w := range f.Workloads() {
		migName = w.Name
		var err error
		if migCS, err = w.Clientset(); err != nil {
			return err
		}
	}
	return nil
}
