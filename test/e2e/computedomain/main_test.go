// SPDX-License-Identifier: Apache-2.0

// Package computedomain runs Shoal end to end on a workload cluster that
// serves NVIDIA's ComputeDomains through the fleet's driver simulator
// (internal/devfleet computedomain.go, profile gb200-nvl72-cd): 3 GB200
// racks of 4 nodes × 4 GPUs, each rack one NVLink clique. The shipped
// shoal-hub and shoal-agent run it (docs/compute-domains.md).
package computedomain

import (
	"os"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// racks × rackSize nodes of 4 GPUs.
const (
	racks    = 3
	rackSize = 4
	profile  = "gb200-nvl72-cd"
)

var (
	fl *framework.Fleet
	// bins holds the builds of shoal, shoal-hub and shoal-agent.
	bins string
	// cs and dyn reach the workload cluster as admin; cluster is its name.
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	cluster string
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithShoalFleet(m, devfleet.Options{Profiles: []string{profile}, Clusters: 1, Nodes: racks * rackSize},
		[]string{"shoal"}, setFleet))
}

func setFleet(f *framework.Fleet, dir string) error {
	fl, bins = f, dir
	w := f.Workloads()[0]
	cluster = w.Name
	var err error
	if cs, err = w.Clientset(); err != nil {
		return err
	}
	cfg, err := w.RESTConfig()
	if err != nil {
		return err
	}
	dyn, err = dynamic.NewForConfig(cfg)
	return err
}
