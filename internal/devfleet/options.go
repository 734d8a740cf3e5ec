// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"io"
)

// Options say what fleet Up starts and where.
type Options struct {
	// Dir holds the state file, PKI, kubeconfigs, data and logs (default DefaultDir()).
	Dir string
	// BinDir and StagesDir locate the binaries and KWOK stages (default: the cache).
	BinDir, StagesDir string
	// Clusters is the number of workload clusters (default: one per profile).
	Clusters int
	// Profiles are assigned to workload clusters in turn (default DefaultProfiles).
	Profiles []string
	// Nodes per workload cluster; 0 takes each profile's default (at least 16).
	Nodes int
	// NoHub skips the hub management cluster.
	NoHub bool
	// NoWorkloads starts no workload cluster (Clusters and Profiles are
	// ignored): the hub cluster, and shoal-hub with Shoal, alone, for a
	// caller that brings its own clusters (the load harness of test/scale).
	NoWorkloads bool
	// BasePort lays the ports out from here (see DefaultBasePort); 0 picks free ports.
	BasePort int
	// NodeWorkers is the number of concurrent node creations per cluster (default 32).
	NodeWorkers int
	// Region is every workload cluster's topology.kubernetes.io/region (default "local").
	Region string
	// PodStartDelays keeps the stock KWOK pod stages' random 2–10 s start
	// delays; by default pods turn Running right after they are bound.
	PodStartDelays bool
	// ControllerManager also runs kube-controller-manager in every cluster
	// (namespace deletion, garbage collection, service accounts, CSR signing
	// with the fleet CA), without its node lifecycle controller: KWOK nodes
	// send no heartbeats and would turn NotReady. (With Shoal, the hub
	// cluster runs kube-controller-manager with the node lifecycle controller
	// either way, for the agents' virtual nodes; see HubNodeMonitorGrace.)
	ControllerManager bool
	// NativeGang turns on Kubernetes' native gang API in every workload
	// cluster (the GenericWorkload feature gate, beta and off by default in
	// v1.37, and scheduling.k8s.io/v1beta1 on kube-apiserver and
	// kube-scheduler): the agent then makes a PodGroup per gang slice
	// (docs/native-gang.md).
	NativeGang bool
	// RealNodes, when set, runs real kubelets as the first nodes of every
	// workload cluster.
	RealNodes *RealNodeOptions
	// Shoal, when set, also starts shoal-hub (on the hub cluster) and one
	// registered shoal-agent per workload cluster once the clusters are up.
	// Ignored with NoHub.
	Shoal *ShoalOptions
	// DieWithParent has the kernel kill every process of the fleet when the
	// process that started it dies (tests); `shoal dev up` leaves it false.
	DieWithParent bool
	// Out receives one line per long step; nil discards them.
	Out io.Writer
	// Progress, when set, is told after each step how many of the planned
	// steps are done (steps.go).
	Progress ProgressFunc
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	if o.BinDir == "" {
		o.BinDir = BinDir()
	}
	if o.StagesDir == "" {
		o.StagesDir = KwokStagesDir()
	}
	if len(o.Profiles) == 0 {
		o.Profiles = DefaultProfiles
	}
	if o.Clusters == 0 {
		o.Clusters = len(o.Profiles)
	}
	if o.NoWorkloads {
		o.Clusters = 0
	}
	if o.Clusters < 0 || o.Nodes < 0 || o.BasePort < 0 || o.BasePort > 65000 {
		return fmt.Errorf("invalid fleet options: clusters=%d nodes=%d base port=%d", o.Clusters, o.Nodes, o.BasePort)
	}
	for _, p := range o.Profiles {
		if _, err := LookupProfile(p); err != nil {
			return err
		}
	}
	if o.NodeWorkers == 0 {
		o.NodeWorkers = 32
	}
	if o.Region == "" {
		o.Region = "local"
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	return nil
}
