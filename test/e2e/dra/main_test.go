// SPDX-License-Identifier: Apache-2.0

// Package dra runs Shoal end to end on a DRA-only workload cluster: KWOK
// nodes of the hgx-h100-dra profile carry no nvidia.com/gpu and no GFD
// label, their GPUs are ResourceSlices of the fleet's DRA driver simulator
// (internal/devfleet dra.go). A second cluster of the same nodes with the
// extended resource is the benchmark's baseline. The shipped shoal-hub and
// shoal-agent run them; the tests' jobs go in through the shoal CLI.
package dra

import (
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/internal/devfleet"
	"github.com/shoal-dev/shoal/test/framework"
)

// nodes is each workload cluster's node count (8 GPUs each).
const nodes = 8

// The profiles of the fleet's two workload clusters: DRA-only, and the same
// nodes with the extended resource nvidia.com/gpu (the benchmark's baseline).
const (
	profileDRA      = "hgx-h100-dra"
	profileExtended = "hgx-h100"
)

var (
	fl *framework.Fleet
	// bins holds the builds of shoal, shoal-hub and shoal-agent.
	bins string
	// draCS reaches the DRA workload cluster as admin.
	draCS   kubernetes.Interface
	draName string
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithShoalFleet(m, devfleet.Options{Profiles: []string{profileDRA, profileExtended}, Clusters: 2, Nodes: nodes},
		[]string{"shoal"}, setFleet))
}

// setFleet keeps f, the binaries' directory and the DRA cluster.
func setFleet(f *framework.Fleet, dir string) error {
	fl, bins = f, dir
	for _, w := range f.Workloads() {
		if w.Profile != profileDRA {
			continue
		}
		draName = w.Name
		var err error
		if draCS, err = w.Clientset(); err != nil {
			return err
		}
	}
	return nil
}
